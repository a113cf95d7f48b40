//! Turning diagnostics into text: codespan-reporting for people.
