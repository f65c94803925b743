//! Python binding (pyo3): filled in by the Python binding work.
