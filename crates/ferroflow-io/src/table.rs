//! Tables (CSV) and documents (JSON), each written atomically ([`crate::file`]).
use crate::file;
use serde::Serialize;
use std::io;
use std::path::Path;

/// Writes a CSV file: the header, then one record per row.
pub fn write_csv<I, S>(path: &Path, header: &[&str], rows: I) -> io::Result<()>
where
    I: IntoIterator<Item = Vec<S>>,
    S: AsRef<[u8]>,
{
    file::write_with(path, |out| {
        let mut w = csv::Writer::from_writer(out);
        w.write_record(header)?;
        for row in rows {
            w.write_record(&row)?;
        }
        w.flush()
    })
}

/// Writes `value` as pretty-printed JSON with a final newline.
pub fn write_json(path: &Path, value: &impl Serialize) -> io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    file::write(path, text + "\n")
}
