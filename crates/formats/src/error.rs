//! Errors of the format layer and the SQLSTATE codes every layer reports.

/// A PostgreSQL SQLSTATE code (five characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SqlState(pub &'static str);

impl SqlState {
    pub const SUCCESSFUL: SqlState = SqlState("00000");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState("0A000");
    pub const CONNECTION_FAILURE: SqlState = SqlState("08006");
    pub const PROTOCOL_VIOLATION: SqlState = SqlState("08P01");
    pub const CARDINALITY_VIOLATION: SqlState = SqlState("21000");
    pub const STRING_DATA_RIGHT_TRUNCATION: SqlState = SqlState("22001");
    pub const NUMERIC_VALUE_OUT_OF_RANGE: SqlState = SqlState("22003");
    pub const INVALID_DATETIME_FORMAT: SqlState = SqlState("22007");
    pub const DATETIME_FIELD_OVERFLOW: SqlState = SqlState("22008");
    pub const DIVISION_BY_ZERO: SqlState = SqlState("22012");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState("22023");
    pub const INVALID_TEXT_REPRESENTATION: SqlState = SqlState("22P02");
    pub const ARRAY_SUBSCRIPT_ERROR: SqlState = SqlState("2202E");
    pub const DATA_EXCEPTION: SqlState = SqlState("22000");
    pub const SUBSTRING_ERROR: SqlState = SqlState("22011");
    pub const NULL_VALUE_NOT_ALLOWED: SqlState = SqlState("22004");
    pub const INVALID_ESCAPE_SEQUENCE: SqlState = SqlState("22025");
    pub const CHARACTER_NOT_IN_REPERTOIRE: SqlState = SqlState("22021");
    pub const INVALID_BINARY_REPRESENTATION: SqlState = SqlState("22P03");
    pub const UNTRANSLATABLE_CHARACTER: SqlState = SqlState("22P05");
    pub const NOT_NULL_VIOLATION: SqlState = SqlState("23502");
    pub const UNIQUE_VIOLATION: SqlState = SqlState("23505");
    pub const FOREIGN_KEY_VIOLATION: SqlState = SqlState("23503");
    pub const ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25001");
    pub const NO_ACTIVE_SQL_TRANSACTION: SqlState = SqlState("25P01");
    pub const IN_FAILED_SQL_TRANSACTION: SqlState = SqlState("25P02");
    pub const INVALID_AUTHORIZATION_SPECIFICATION: SqlState = SqlState("28000");
    pub const INVALID_PASSWORD: SqlState = SqlState("28P01");
    pub const INVALID_SQL_STATEMENT_NAME: SqlState = SqlState("26000");
    pub const INVALID_CURSOR_NAME: SqlState = SqlState("34000");
    pub const SERIALIZATION_FAILURE: SqlState = SqlState("40001");
    pub const DEADLOCK_DETECTED: SqlState = SqlState("40P01");
    pub const SYNTAX_ERROR: SqlState = SqlState("42601");
    pub const UNDEFINED_COLUMN: SqlState = SqlState("42703");
    pub const UNDEFINED_FUNCTION: SqlState = SqlState("42883");
    pub const UNDEFINED_TABLE: SqlState = SqlState("42P01");
    pub const DUPLICATE_TABLE: SqlState = SqlState("42P07");
    pub const AMBIGUOUS_COLUMN: SqlState = SqlState("42702");
    pub const DATATYPE_MISMATCH: SqlState = SqlState("42804");
    pub const GROUPING_ERROR: SqlState = SqlState("42803");
    pub const INVALID_TABLE_DEFINITION: SqlState = SqlState("42P16");
    pub const UNDEFINED_OBJECT: SqlState = SqlState("42704");
    pub const INVALID_COLUMN_REFERENCE: SqlState = SqlState("42P10");
    pub const INVALID_FOREIGN_KEY: SqlState = SqlState("42830");
    pub const DUPLICATE_PREPARED_STATEMENT: SqlState = SqlState("42P05");
    pub const DUPLICATE_CURSOR: SqlState = SqlState("42P03");
    pub const TOO_MANY_CONNECTIONS: SqlState = SqlState("53300");
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState("54000");
    pub const STATEMENT_TOO_COMPLEX: SqlState = SqlState("54001");
    pub const TOO_MANY_ARGUMENTS: SqlState = SqlState("54023");
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: SqlState = SqlState("55000");
    pub const LOCK_NOT_AVAILABLE: SqlState = SqlState("55P03");
    pub const QUERY_CANCELED: SqlState = SqlState("57014");
    pub const IO_ERROR: SqlState = SqlState("58030");
    pub const DATA_CORRUPTED: SqlState = SqlState("XX001");
    pub const INTERNAL_ERROR: SqlState = SqlState("XX000");
    pub const WARNING: SqlState = SqlState("01000");
    pub const SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION: SqlState = SqlState("08004");
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: SqlState = SqlState("2200H");
    pub const INVALID_REGULAR_EXPRESSION: SqlState = SqlState("2201B");
    pub const INVALID_ROW_COUNT_IN_LIMIT_CLAUSE: SqlState = SqlState("2201W");
    pub const READ_ONLY_SQL_TRANSACTION: SqlState = SqlState("25006");
    pub const DEPENDENT_OBJECTS_STILL_EXIST: SqlState = SqlState("2BP01");
    pub const INVALID_SAVEPOINT_SPECIFICATION: SqlState = SqlState("3B001");
    pub const UNDEFINED_SCHEMA: SqlState = SqlState("3F000");
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState("42501");
    pub const DUPLICATE_COLUMN: SqlState = SqlState("42701");
    pub const DUPLICATE_OBJECT: SqlState = SqlState("42710");
    pub const DUPLICATE_ALIAS: SqlState = SqlState("42712");
    pub const AMBIGUOUS_FUNCTION: SqlState = SqlState("42725");
    pub const WRONG_OBJECT_TYPE: SqlState = SqlState("42809");
    pub const CANNOT_COERCE: SqlState = SqlState("42846");
    pub const GENERATED_ALWAYS: SqlState = SqlState("428C9");
    pub const UNDEFINED_PARAMETER: SqlState = SqlState("42P02");
    pub const INVALID_OBJECT_DEFINITION: SqlState = SqlState("42P17");
    pub const INDETERMINATE_DATATYPE: SqlState = SqlState("42P18");
    pub const INSUFFICIENT_RESOURCES: SqlState = SqlState("53000");
    pub const OUT_OF_MEMORY: SqlState = SqlState("53200");
    pub const TOO_MANY_COLUMNS: SqlState = SqlState("54011");
    pub const OBJECT_IN_USE: SqlState = SqlState("55006");
    pub const UNDEFINED_FILE: SqlState = SqlState("58P01");
    pub const DUPLICATE_FILE: SqlState = SqlState("58P02");

    pub fn code(&self) -> &'static str {
        self.0
    }

    /// The known SQLSTATE with this code (XX000 for unknown codes), for
    /// codes that arrive as bytes.
    pub fn from_code(code: &str) -> SqlState {
        const KNOWN: &[SqlState] = &[
            SqlState::SUCCESSFUL,
            SqlState::FEATURE_NOT_SUPPORTED,
            SqlState::CARDINALITY_VIOLATION,
            SqlState::STRING_DATA_RIGHT_TRUNCATION,
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            SqlState::INVALID_DATETIME_FORMAT,
            SqlState::DATETIME_FIELD_OVERFLOW,
            SqlState::DIVISION_BY_ZERO,
            SqlState::INVALID_PARAMETER_VALUE,
            SqlState::INVALID_TEXT_REPRESENTATION,
            SqlState::INVALID_ESCAPE_SEQUENCE,
            SqlState::NOT_NULL_VIOLATION,
            SqlState::UNIQUE_VIOLATION,
            SqlState::SERIALIZATION_FAILURE,
            SqlState::DEADLOCK_DETECTED,
            SqlState::DATATYPE_MISMATCH,
            SqlState::UNDEFINED_FUNCTION,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::QUERY_CANCELED,
            SqlState::IO_ERROR,
            SqlState::DATA_CORRUPTED,
            SqlState::INTERNAL_ERROR,
        ];
        KNOWN
            .iter()
            .copied()
            .find(|s| s.0 == code)
            .unwrap_or(SqlState::INTERNAL_ERROR)
    }
}

impl std::fmt::Display for SqlState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Errors raised while parsing bytes or evaluating expressions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Bytes did not parse: a corrupt page, record, message or program.
    #[error("corrupted: {0}")]
    Corrupted(String),
    /// A runtime error with a SQLSTATE (division by zero, overflow, bad text...).
    #[error("{message}")]
    Sql {
        code: SqlState,
        message: String,
        /// PostgreSQL's DETAIL line, where it gives one.
        detail: Option<String>,
        /// PostgreSQL's HINT line, where it gives one.
        hint: Option<String>,
    },
}

impl Error {
    pub fn corrupted(what: impl Into<String>) -> Error {
        Error::Corrupted(what.into())
    }

    pub fn sql(code: SqlState, message: impl Into<String>) -> Error {
        Error::Sql {
            code,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    /// The error with a DETAIL line (a corrupt-bytes error has none).
    pub fn with_detail(self, d: impl Into<String>) -> Error {
        match self {
            Error::Sql {
                code,
                message,
                hint,
                ..
            } => Error::Sql {
                code,
                message,
                detail: Some(d.into()),
                hint,
            },
            e => e,
        }
    }

    /// The error with a HINT line.
    pub fn with_hint(self, h: impl Into<String>) -> Error {
        match self {
            Error::Sql {
                code,
                message,
                detail,
                ..
            } => Error::Sql {
                code,
                message,
                detail,
                hint: Some(h.into()),
            },
            e => e,
        }
    }

    pub fn sqlstate(&self) -> SqlState {
        match self {
            Error::Corrupted(_) => SqlState::DATA_CORRUPTED,
            Error::Sql { code, .. } => *code,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
