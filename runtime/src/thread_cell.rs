//! [`with_set`]: a thread-local value set for the length of one call,
//! as the current deadline and the marks of `observe::waiting` are.

use std::cell::Cell;
use std::thread::LocalKey;

/// Runs `f` with `key` set to `value`, putting the previous value back
/// afterwards, also when `f` panics. `try_with` fails only while the thread
/// is being torn down; `f` then runs with the cell as it is, rather than
/// panicking.
pub(crate) fn with_set<T: Copy + 'static, R>(
    key: &'static LocalKey<Cell<T>>,
    value: T,
    f: impl FnOnce() -> R,
) -> R {
    struct Restore<T: Copy + 'static> {
        key: &'static LocalKey<Cell<T>>,
        previous: T,
    }

    impl<T: Copy + 'static> Drop for Restore<T> {
        fn drop(&mut self) {
            let _ = self.key.try_with(|cell| cell.set(self.previous));
        }
    }

    let _restore = key
        .try_with(|cell| cell.replace(value))
        .ok()
        .map(|previous| Restore { key, previous });
    f()
}
