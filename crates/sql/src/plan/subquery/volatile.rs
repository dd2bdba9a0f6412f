//! Sequence functions (`nextval`, `currval`, `setval`): volatile calls
//! the bytecode cannot make (they change or read state outside the row).
//! Each is a per-row slot of its query, evaluated on the host with the
//! transaction at hand, never memoized.

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::Transaction;

use crate::{Error, Result};

pub use crate::bind::sequence_call::{SequenceCall, SequenceFunc};

impl SequenceCall {
    pub fn explain(&self) -> String {
        let f = match self.func {
            SequenceFunc::Next => "nextval",
            SequenceFunc::Curr => "currval",
            SequenceFunc::Set => "setval",
        };
        format!("{f}('{}')", self.sequence)
    }

    pub fn call(
        &self,
        tx: Option<&mut Transaction>,
        row: &[Value],
        params: &[Value],
    ) -> Result<Value> {
        let Some(tx) = tx else {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "a sequence function in a re-checked condition is not supported",
            ));
        };
        let v = match self.func {
            SequenceFunc::Next => tx.nextval(&self.sequence)?,
            SequenceFunc::Curr => tx.currval(&self.sequence)?,
            SequenceFunc::Set => {
                let value = match self.args.first() {
                    Some(p) => p.eval(row, params)?,
                    None => Value::Null,
                };
                let called = match self.args.get(1) {
                    Some(p) => p.eval(row, params)?,
                    None => Value::Bool(true),
                };
                let (Some(value), Value::Bool(called)) = (value.as_i64(), called) else {
                    return Ok(Value::Null);
                };
                tx.setval(&self.sequence, value, called)?
            }
        };
        Ok(Value::BigInt(v))
    }
}
