//! Shared helpers for integration tests (`mod support;` in a test file).

pub mod cli;
pub mod leaks;
pub mod mock_llm;
pub mod mock_provider;
pub mod report;
pub mod run;
pub mod strict_llm;
pub mod suite;
pub mod traces;
