//! Upstash Box: being written (#40).
