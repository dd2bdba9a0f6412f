//! The nine TPC-C tables (clause 1.3) with their primary keys, and the
//! two secondary indexes the transactions look customers and their
//! orders up by. The ORDER table is named `orders` (ORDER is a reserved
//! word).

/// A table: its name, its columns with their SQL types, and its primary
/// key (HISTORY has none).
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [(&'static str, &'static str)],
    pub primary_key: Option<&'static str>,
}

impl Table {
    pub fn create_sql(&self) -> String {
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|(c, ty)| format!("{c} {ty}"))
            .collect();
        if let Some(pk) = self.primary_key {
            parts.push(format!("PRIMARY KEY ({pk})"));
        }
        format!("CREATE TABLE {} ({})", self.name, parts.join(", "))
    }

    pub fn column_names(&self) -> Vec<&'static str> {
        self.columns.iter().map(|(c, _)| *c).collect()
    }
}

pub const WAREHOUSE: Table = Table {
    name: "warehouse",
    columns: &[
        ("w_id", "INT NOT NULL"),
        ("w_name", "VARCHAR(10)"),
        ("w_street_1", "VARCHAR(20)"),
        ("w_street_2", "VARCHAR(20)"),
        ("w_city", "VARCHAR(20)"),
        ("w_state", "CHAR(2)"),
        ("w_zip", "CHAR(9)"),
        ("w_tax", "DECIMAL(4,4)"),
        ("w_ytd", "DECIMAL(12,2)"),
    ],
    primary_key: Some("w_id"),
};

pub const DISTRICT: Table = Table {
    name: "district",
    columns: &[
        ("d_id", "INT NOT NULL"),
        ("d_w_id", "INT NOT NULL"),
        ("d_name", "VARCHAR(10)"),
        ("d_street_1", "VARCHAR(20)"),
        ("d_street_2", "VARCHAR(20)"),
        ("d_city", "VARCHAR(20)"),
        ("d_state", "CHAR(2)"),
        ("d_zip", "CHAR(9)"),
        ("d_tax", "DECIMAL(4,4)"),
        ("d_ytd", "DECIMAL(12,2)"),
        ("d_next_o_id", "INT"),
    ],
    primary_key: Some("d_w_id, d_id"),
};

pub const CUSTOMER: Table = Table {
    name: "customer",
    columns: &[
        ("c_id", "INT NOT NULL"),
        ("c_d_id", "INT NOT NULL"),
        ("c_w_id", "INT NOT NULL"),
        ("c_first", "VARCHAR(16)"),
        ("c_middle", "CHAR(2)"),
        ("c_last", "VARCHAR(16)"),
        ("c_street_1", "VARCHAR(20)"),
        ("c_street_2", "VARCHAR(20)"),
        ("c_city", "VARCHAR(20)"),
        ("c_state", "CHAR(2)"),
        ("c_zip", "CHAR(9)"),
        ("c_phone", "CHAR(16)"),
        ("c_since", "TIMESTAMP"),
        ("c_credit", "CHAR(2)"),
        ("c_credit_lim", "DECIMAL(12,2)"),
        ("c_discount", "DECIMAL(4,4)"),
        ("c_balance", "DECIMAL(12,2)"),
        ("c_ytd_payment", "DECIMAL(12,2)"),
        ("c_payment_cnt", "INT"),
        ("c_delivery_cnt", "INT"),
        ("c_data", "VARCHAR(500)"),
    ],
    primary_key: Some("c_w_id, c_d_id, c_id"),
};

pub const HISTORY: Table = Table {
    name: "history",
    columns: &[
        ("h_c_id", "INT"),
        ("h_c_d_id", "INT"),
        ("h_c_w_id", "INT"),
        ("h_d_id", "INT"),
        ("h_w_id", "INT"),
        ("h_date", "TIMESTAMP"),
        ("h_amount", "DECIMAL(6,2)"),
        ("h_data", "VARCHAR(24)"),
    ],
    primary_key: None,
};

pub const NEW_ORDER: Table = Table {
    name: "new_order",
    columns: &[
        ("no_o_id", "INT NOT NULL"),
        ("no_d_id", "INT NOT NULL"),
        ("no_w_id", "INT NOT NULL"),
    ],
    primary_key: Some("no_w_id, no_d_id, no_o_id"),
};

pub const ORDERS: Table = Table {
    name: "orders",
    columns: &[
        ("o_id", "INT NOT NULL"),
        ("o_d_id", "INT NOT NULL"),
        ("o_w_id", "INT NOT NULL"),
        ("o_c_id", "INT"),
        ("o_entry_d", "TIMESTAMP"),
        ("o_carrier_id", "INT"),
        ("o_ol_cnt", "INT"),
        ("o_all_local", "INT"),
    ],
    primary_key: Some("o_w_id, o_d_id, o_id"),
};

pub const ORDER_LINE: Table = Table {
    name: "order_line",
    columns: &[
        ("ol_o_id", "INT NOT NULL"),
        ("ol_d_id", "INT NOT NULL"),
        ("ol_w_id", "INT NOT NULL"),
        ("ol_number", "INT NOT NULL"),
        ("ol_i_id", "INT"),
        ("ol_supply_w_id", "INT"),
        ("ol_delivery_d", "TIMESTAMP"),
        ("ol_quantity", "INT"),
        ("ol_amount", "DECIMAL(6,2)"),
        ("ol_dist_info", "CHAR(24)"),
    ],
    primary_key: Some("ol_w_id, ol_d_id, ol_o_id, ol_number"),
};

pub const ITEM: Table = Table {
    name: "item",
    columns: &[
        ("i_id", "INT NOT NULL"),
        ("i_im_id", "INT"),
        ("i_name", "VARCHAR(24)"),
        ("i_price", "DECIMAL(5,2)"),
        ("i_data", "VARCHAR(50)"),
    ],
    primary_key: Some("i_id"),
};

pub const STOCK: Table = Table {
    name: "stock",
    columns: &[
        ("s_i_id", "INT NOT NULL"),
        ("s_w_id", "INT NOT NULL"),
        ("s_quantity", "INT"),
        ("s_dist_01", "CHAR(24)"),
        ("s_dist_02", "CHAR(24)"),
        ("s_dist_03", "CHAR(24)"),
        ("s_dist_04", "CHAR(24)"),
        ("s_dist_05", "CHAR(24)"),
        ("s_dist_06", "CHAR(24)"),
        ("s_dist_07", "CHAR(24)"),
        ("s_dist_08", "CHAR(24)"),
        ("s_dist_09", "CHAR(24)"),
        ("s_dist_10", "CHAR(24)"),
        ("s_ytd", "INT"),
        ("s_order_cnt", "INT"),
        ("s_remote_cnt", "INT"),
        ("s_data", "VARCHAR(50)"),
    ],
    primary_key: Some("s_w_id, s_i_id"),
};

/// Every table, in the order they are created (and dropped in reverse).
pub const TABLES: [&Table; 9] = [
    &WAREHOUSE,
    &DISTRICT,
    &CUSTOMER,
    &HISTORY,
    &NEW_ORDER,
    &ORDERS,
    &ORDER_LINE,
    &ITEM,
    &STOCK,
];

/// The secondary indexes, built after the load: customers by last name
/// (Payment and Order-Status by name, sorted by first name) and orders
/// by customer (Order-Status's newest order).
pub const INDEXES: [&str; 2] = [
    "CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first)",
    "CREATE INDEX orders_by_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)",
];

/// Drops the tables an earlier run left.
pub fn drop_sql() -> Vec<String> {
    TABLES
        .iter()
        .rev()
        .map(|t| format!("DROP TABLE IF EXISTS {}", t.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_statements_name_every_column_and_key() {
        assert_eq!(
            NEW_ORDER.create_sql(),
            "CREATE TABLE new_order (no_o_id INT NOT NULL, no_d_id INT NOT NULL, \
             no_w_id INT NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id))"
        );
        assert!(!HISTORY.create_sql().contains("PRIMARY KEY"));
        let widths: Vec<usize> = TABLES.iter().map(|t| t.columns.len()).collect();
        assert_eq!(widths, [9, 11, 21, 8, 3, 8, 10, 5, 17]);
    }
}
