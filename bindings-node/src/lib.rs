//! Node binding (napi-rs): filled in by the Node binding work.
