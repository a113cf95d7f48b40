//! Runs the phases in order for one source file.
