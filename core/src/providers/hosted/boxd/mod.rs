//! boxd: being written (#40).
