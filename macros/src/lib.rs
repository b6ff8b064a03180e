//! Implementation detail of timebox: its attribute macros.
//!
//! Use them through the `timebox` crate, which re-exports them and provides
//! the runtime their expansions call.

use proc_macro::TokenStream;

mod sim_test;

/// Runs an async test deterministically in virtual time, with a seed.
///
/// The function takes exactly one argument, a `timebox::sim::Sim`, and may
/// return `()` or a `Result<(), E>`. It runs on a current-thread runtime whose
/// clock is paused at the start. On failure the test prints a line that
/// replays the same seed.
///
/// Keys:
/// - `seed = N`: run with seed `N` (an integer literal).
/// - `seeds = N`: run the body once for each of `N` seeds, `base..base + N`,
///   where `base` is `TIMEBOX_SIM_SEED` or 0.
///
/// Without either, the seed is `TIMEBOX_SIM_SEED` (decimal or `0x` hex), or 0.
/// See `timebox::sim` for the replay line and the liveness bound.
///
/// ```text
/// use timebox::sim::Sim;
///
/// #[timebox::sim_test(seeds = 8)]
/// async fn retries_replay(sim: Sim) {
///     let first = sim.entropy().uniform(1..=3);
///     assert!((1..=3).contains(&first));
/// }
/// ```
#[proc_macro_attribute]
pub fn sim_test(args: TokenStream, item: TokenStream) -> TokenStream {
    sim_test::sim_test(args.into(), item.into()).into()
}
