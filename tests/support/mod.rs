//! Shared helpers for integration tests (`mod support;` in a test file).

pub mod mock_llm;
pub mod run;
