//! Railway: being written (#40).
