//! What the model is told about a tool: its name, description and the JSON Schema of its arguments, and the
//! checks every definition passes before a model sees it (`register`'s, and a custom tool source's).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::invalid::Invalid;
use crate::schema::Schema;

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

/// The longest name providers accept (OpenAI's and Anthropic's rule: `^[a-zA-Z0-9_-]{1,64}$`).
const NAME_LIMIT: usize = 64;

impl ToolDefinition {
    /// Checks the name as `register` does, naming it under `at` (`tool.name`): a name providers accept (one
    /// outside their rule fails every request).
    pub(crate) fn check_name(&self, at: &str) -> Result<(), String> {
        let name = &self.name;
        if name.is_empty() {
            return Err(format!("{at}.name must be a non-empty string"));
        }
        let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if !name.chars().all(allowed) || name.len() > NAME_LIMIT {
            let got = match name.len() > NAME_LIMIT {
                true => format!("{} characters", name.chars().count()),
                false => format!("\"{name}\""),
            };
            return Err(format!(
                "{at}.name must match ^[a-zA-Z0-9_-]{{1,64}}$ (got {got})"
            ));
        }
        Ok(())
    }

    /// `parameters`, compiled: a schema the validator can apply, or the error naming the bad keyword under
    /// `at` (`tool.parameters.properties.path.pattern`).
    pub(crate) fn compile(&self, at: &str) -> Result<Schema, Invalid> {
        Schema::compile(&self.parameters, &format!("{at}.parameters"))
    }
}

/// Checks a tool source's definitions as `register` checks a tool, before a model sees them: each name as
/// providers accept it and used once, each `parameters` a schema the validator can apply. The first
/// problem, naming the field under `path` (`options.tools.definitions()`):
/// `options.tools.definitions()[1].name must match ^[a-zA-Z0-9_-]{1,64}$ (got "read file")`.
pub fn check_definitions(definitions: &[ToolDefinition], path: &str) -> Result<(), Invalid> {
    for (index, definition) in definitions.iter().enumerate() {
        let at = format!("{path}[{index}]");
        definition.check_name(&at)?;
        let name = &definition.name;
        if let Some(first) = definitions[..index].iter().position(|d| d.name == *name) {
            return Err(Invalid::from(format!(
                "{at}.name must be unique (got \"{name}\", the name of {path}[{first}] too)"
            )));
        }
        definition.compile(&at)?;
    }
    Ok(())
}
