//! What the model is told about a tool: its name, description and the JSON Schema of its arguments.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// A JSON Schema for the arguments object.
    #[serde(default = "any_object")]
    pub parameters: Value,
}

pub(crate) fn any_object() -> Value {
    serde_json::json!({ "type": "object" })
}
