//! The table the tour prints: one row a scenario, what the contract
//! promises beside what was observed, grouped in sections that each say
//! first what they show.

use std::time::Duration;

/// How long a scenario waits for a connection, a stream or a server to end
/// before it says it is still open: a row that is not ok, not a tour that
/// hangs.
pub(crate) const STILL_OPEN_AFTER: Duration = Duration::from_secs(600);

/// One line of the table.
pub(crate) struct Row {
    scenario: String,
    expected: String,
    observed: String,
}

impl Row {
    pub(crate) fn new(
        scenario: impl Into<String>,
        expected: impl ToString,
        observed: impl ToString,
    ) -> Self {
        Self {
            scenario: scenario.into(),
            expected: expected.to_string(),
            observed: observed.to_string(),
        }
    }

    fn ok(&self) -> bool {
        self.expected == self.observed
    }
}

/// A section of the tour: a title, the lines that say what its rows show
/// and why it matters, and the rows.
pub(crate) struct Section {
    pub(crate) title: &'static str,
    pub(crate) intro: &'static [&'static str],
    pub(crate) rows: Vec<Row>,
}

/// Prints every section, its intro then its rows, in one table whose
/// columns line up across sections; whether every row was ok.
pub(crate) fn print(sections: &[Section]) -> bool {
    let rows = || sections.iter().flat_map(|section| &section.rows);
    let width =
        |f: fn(&Row) -> usize, title: &str| rows().map(f).max().unwrap_or(0).max(title.len());
    let (s, e, o) = (
        width(|r| r.scenario.len(), "scenario"),
        width(|r| r.expected.len(), "expected"),
        width(|r| r.observed.len(), "observed"),
    );
    for section in sections {
        println!();
        println!("## {}", section.title);
        for line in section.intro {
            println!("{line}");
        }
        println!();
        println!(
            "{:s$} | {:e$} | {:o$} | ok",
            "scenario", "expected", "observed"
        );
        println!(
            "{}-|-{}-|-{}-|---",
            "-".repeat(s),
            "-".repeat(e),
            "-".repeat(o)
        );
        for row in &section.rows {
            let ok = if row.ok() { "ok" } else { "NOT OK" };
            println!(
                "{:s$} | {:e$} | {:o$} | {ok}",
                row.scenario, row.expected, row.observed
            );
        }
    }
    rows().all(Row::ok)
}
