//! The set-returning functions over json and jsonb: `json_each`,
//! `json_each_text`, `json_array_elements`, `json_array_elements_text`,
//! `json_object_keys` and their `jsonb_` twins, as rows of values.
//!
//! ```text
//!  jsonb_each('{"b":1,"a":"x"}')   (a, "x"), (b, 1)      jsonb's key order
//!  json_each('{"b":1,"a":"x"}')    (b, 1), (a, "x")      as written
//!  jsonb_each('[1]')               22023 cannot call jsonb_each on a non-object
//! ```

use crate::error::{Error, Result};
use crate::json::{invalid, Jsonb, Kind};
use crate::json_funcs::{doc, Doc};
use crate::types::DataType;
use crate::value::Value;

/// The set-returning functions over json / jsonb in FROM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonRows {
    /// `json_each` / `jsonb_each`: (key text, value json|jsonb).
    Each,
    /// `…_each_text`: (key text, value text).
    EachText,
    /// `…_array_elements`: value json|jsonb.
    Elements,
    ElementsText,
    /// `…_object_keys`: key text.
    ObjectKeys,
}

impl JsonRows {
    pub fn by_name(name: &str) -> Option<(JsonRows, bool)> {
        let (jsonb, rest) = match name.strip_prefix("jsonb_") {
            Some(r) => (true, r),
            None => (false, name.strip_prefix("json_")?),
        };
        let kind = match rest {
            "each" => JsonRows::Each,
            "each_text" => JsonRows::EachText,
            "array_elements" => JsonRows::Elements,
            "array_elements_text" => JsonRows::ElementsText,
            "object_keys" => JsonRows::ObjectKeys,
            _ => return None,
        };
        Some((kind, jsonb))
    }

    /// The columns' names and types, for an argument of type `arg`.
    pub fn columns(self, arg: DataType) -> Vec<(&'static str, DataType)> {
        match self {
            JsonRows::Each => vec![("key", DataType::Text), ("value", arg)],
            JsonRows::EachText => vec![("key", DataType::Text), ("value", DataType::Text)],
            JsonRows::Elements => vec![("value", arg)],
            JsonRows::ElementsText => vec![("value", DataType::Text)],
            JsonRows::ObjectKeys => vec![("json_object_keys", DataType::Text)],
        }
    }

    fn name(self, jsonb: bool) -> String {
        let base = match self {
            JsonRows::Each => "each",
            JsonRows::EachText => "each_text",
            JsonRows::Elements => "array_elements",
            JsonRows::ElementsText => "array_elements_text",
            JsonRows::ObjectKeys => "object_keys",
        };
        format!("{}_{base}", if jsonb { "jsonb" } else { "json" })
    }

    /// The rows of `v` (no rows for NULL).
    pub fn rows(self, v: &Value) -> Result<Vec<Vec<Value>>> {
        let Some(d) = doc(v) else {
            return Ok(Vec::new());
        };
        let jsonb = matches!(v, Value::Jsonb(_));
        let name = self.name(jsonb);
        let text_of = |t: Option<String>| t.map_or(Value::Null, Value::Text);
        let objects = matches!(
            self,
            JsonRows::Each | JsonRows::EachText | JsonRows::ObjectKeys
        );
        let refuse = |what: &str| -> Error {
            if objects {
                if self == JsonRows::ObjectKeys {
                    invalid(format!("cannot call {name} on {what}"))
                } else {
                    invalid(format!("cannot call {name} on a non-object"))
                }
            } else {
                invalid(format!("cannot extract elements from {what}"))
            }
        };
        Ok(match d? {
            Doc::Jsonb(j) => match (j, objects) {
                (Jsonb::Object(f), true) => f
                    .iter()
                    .map(|(k, val)| match self {
                        JsonRows::Each => {
                            vec![Value::Text(k.clone()), Value::Jsonb(Box::new(val.clone()))]
                        }
                        JsonRows::EachText => vec![Value::Text(k.clone()), text_of(val.as_text())],
                        _ => vec![Value::Text(k.clone())],
                    })
                    .collect(),
                (Jsonb::Array(items), false) => items
                    .iter()
                    .map(|val| match self {
                        JsonRows::Elements => vec![Value::Jsonb(Box::new(val.clone()))],
                        _ => vec![text_of(val.as_text())],
                    })
                    .collect(),
                (Jsonb::Object(_), false) => return Err(refuse("an object")),
                (Jsonb::Array(_), true) => return Err(refuse("an array")),
                _ => return Err(refuse("a scalar")),
            },
            Doc::Json(s, n) => match (&n.kind, objects) {
                (Kind::Object(f), true) => f
                    .iter()
                    .map(|(k, val)| match self {
                        JsonRows::Each => {
                            vec![Value::Text(k.clone()), Value::Json(val.text(s).to_string())]
                        }
                        JsonRows::EachText => vec![Value::Text(k.clone()), text_of(val.as_text(s))],
                        _ => vec![Value::Text(k.clone())],
                    })
                    .collect(),
                (Kind::Array(items), false) => items
                    .iter()
                    .map(|val| match self {
                        JsonRows::Elements => vec![Value::Json(val.text(s).to_string())],
                        _ => vec![text_of(val.as_text(s))],
                    })
                    .collect(),
                (Kind::Object(_), false) => return Err(refuse("an object")),
                (Kind::Array(_), true) => return Err(refuse("an array")),
                _ => return Err(refuse("a scalar")),
            },
        })
    }
}
