//! Tools (SPEC §3): what the model is told about a tool (`definition`), the executor boundary the loop calls
//! for each call (`executor`), and the registry, the core executor (`registry`).

pub mod definition;
pub mod executor;
pub mod registry;

pub(crate) use definition::any_object;
pub use definition::ToolDefinition;
pub use executor::{
    CallSettings, Clock, ExecutionContext, ExecutionMode, HookFuture, HostValue, ProgressSink,
    ToolExecutor, ToolReply,
};
pub use registry::{
    RegistryApprovals, Tool, ToolCallContext, ToolHandler, ToolOutput, ToolRegistry,
};
