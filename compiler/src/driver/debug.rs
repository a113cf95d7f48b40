//! The debug information's view of the sources: which files there are, and the line of each
//! span of the preprocessed text, through the source map (a macro's expansion is at the line
//! that invokes it; a header's code at its own file and line).

use crate::back::{DebugInfo, DebugLevel};
use crate::diag::Span;
use crate::front::cdp::preprocess::SourceMap;
use std::path::Path;
use std::sync::Arc;

/// [`DebugInfo`] for the files of `map`: each named as the user named it, in the current folder
/// when the name is relative (as nvcc's `.file` lines are absolute paths).
pub(super) fn debug_info(level: DebugLevel, map: Arc<SourceMap>) -> DebugInfo {
    let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| ".".into());
    let files = map
        .files
        .iter()
        .map(|entry| {
            let name = entry.file.name.clone();
            let dir = if Path::new(&name).is_absolute() || name.starts_with('<') { String::new() } else { cwd.clone() };
            (name, dir)
        })
        .collect();
    let locate = move |span: Span| {
        let (file, offset) = map.file_position(span.start);
        let (line, column) = map.files.get(file as usize).map_or((1, 1), |f| f.line_column(offset));
        (file as usize, line as u32, column as u32)
    };
    DebugInfo { level, files, locate: Arc::new(locate) }
}
