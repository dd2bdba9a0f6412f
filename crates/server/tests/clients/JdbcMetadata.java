// Reads a schema through the PostgreSQL JDBC driver's DatabaseMetaData,
// as BenchBase and other JDBC tools do: getTables, getColumns (types,
// sizes, nullability, defaults, positions), getPrimaryKeys (in key
// order), getIndexInfo, getSchemas, getImportedKeys / getExportedKeys of
// a two-column FOREIGN KEY, getTypeInfo; SHOW ALL read by column name
// (BenchBase's parameter collector); then a batch of 1,000 inserts the
// driver rewrites into multi-row INSERTs, and a batch refused by the
// foreign key (23503).
// The expected values are PostgreSQL 15's: the program passes against
// PostgreSQL and against ndpdb.
//
// java -cp postgresql.jar JdbcMetadata.java PORT   (exit 0 = all checks hold)

import java.sql.*;
import java.util.*;

public class JdbcMetadata {
    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("FAILED: " + what);
            System.exit(1);
        }
    }

    static List<Map<String, String>> rows(ResultSet rs) throws SQLException {
        ResultSetMetaData m = rs.getMetaData();
        List<Map<String, String>> out = new ArrayList<>();
        while (rs.next()) {
            Map<String, String> row = new HashMap<>();
            for (int i = 1; i <= m.getColumnCount(); i++) {
                row.put(m.getColumnLabel(i).toUpperCase(), rs.getString(i));
            }
            out.add(row);
        }
        rs.close();
        return out;
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/postgres?user=postgres&reWriteBatchedInserts=true";
        try (Connection c = DriverManager.getConnection(url)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jm_line");
                s.execute("DROP TABLE IF EXISTS jm_order");
                s.execute("DROP TABLE IF EXISTS jm_item");
                s.execute("CREATE TABLE jm_order (w_id INT NOT NULL, o_id BIGINT NOT NULL, c_name VARCHAR(16), "
                        + "amount NUMERIC(12,2) DEFAULT 0, note TEXT, placed TIMESTAMP, flag BOOLEAN DEFAULT false, "
                        + "code CHAR(4), PRIMARY KEY (w_id, o_id))");
                s.execute("CREATE INDEX jm_order_name ON jm_order (c_name, w_id)");
                s.execute("CREATE TABLE jm_item (i_id INT PRIMARY KEY, price DOUBLE PRECISION NOT NULL, born DATE)");
                s.execute("CREATE TABLE jm_line (l_w_id INT NOT NULL, l_o_id BIGINT NOT NULL, l_number INT NOT NULL, "
                        + "l_i_id INT REFERENCES jm_item ON DELETE RESTRICT, PRIMARY KEY (l_w_id, l_o_id, l_number), "
                        + "CONSTRAINT jm_line_order_fk FOREIGN KEY (l_w_id, l_o_id) REFERENCES jm_order (w_id, o_id) "
                        + "ON DELETE CASCADE)");
            }
            DatabaseMetaData md = c.getMetaData();

            List<Map<String, String>> tables = rows(md.getTables(null, "public", "jm_%", new String[] {"TABLE"}));
            check(tables.size() == 3, "getTables: three tables, got " + tables);
            check(tables.get(0).get("TABLE_NAME").equals("jm_item")
                    && tables.get(1).get("TABLE_NAME").equals("jm_line")
                    && tables.get(2).get("TABLE_NAME").equals("jm_order"), "getTables: in name order");
            for (Map<String, String> t : tables) {
                check("TABLE".equals(t.get("TABLE_TYPE")) && "public".equals(t.get("TABLE_SCHEM")),
                        "getTables: type and schema " + t);
            }

            // name, DATA_TYPE, TYPE_NAME, COLUMN_SIZE, DECIMAL_DIGITS, NULLABLE, COLUMN_DEF
            String[][] expected = {
                {"w_id", "4", "int4", "10", "0", "0", null},
                {"o_id", "-5", "int8", "19", "0", "0", null},
                {"c_name", "12", "varchar", "16", "0", "1", null},
                {"amount", "2", "numeric", "12", "2", "1", "0"},
                {"note", "12", "text", "2147483647", "0", "1", null},
                {"placed", "93", "timestamp", "29", "6", "1", null},
                {"flag", "-7", "bool", "1", "0", "1", "false"},
                {"code", "1", "bpchar", "4", "0", "1", null},
            };
            List<Map<String, String>> cols = rows(md.getColumns(null, "public", "jm_order", "%"));
            check(cols.size() == expected.length, "getColumns: " + expected.length + " columns, got " + cols.size());
            for (int i = 0; i < expected.length; i++) {
                Map<String, String> col = cols.get(i);
                String[] e = expected[i];
                String[] keys = {"COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "COLUMN_DEF"};
                for (int k = 0; k < keys.length; k++) {
                    check(Objects.equals(e[k], col.get(keys[k])),
                            "getColumns " + e[0] + " " + keys[k] + ": expected " + e[k] + ", got " + col.get(keys[k]));
                }
                check(String.valueOf(i + 1).equals(col.get("ORDINAL_POSITION")), "getColumns ORDINAL_POSITION of " + e[0]);
                check((e[5].equals("0") ? "NO" : "YES").equals(col.get("IS_NULLABLE")), "getColumns IS_NULLABLE of " + e[0]);
            }
            List<Map<String, String>> itemCols = rows(md.getColumns(null, "public", "jm_item", "pr%"));
            check(itemCols.size() == 1 && "price".equals(itemCols.get(0).get("COLUMN_NAME"))
                    && "8".equals(itemCols.get(0).get("DATA_TYPE"))
                    && "0".equals(itemCols.get(0).get("NULLABLE")), "getColumns with a column pattern " + itemCols);

            List<Map<String, String>> pk = rows(md.getPrimaryKeys(null, "public", "jm_order"));
            check(pk.size() == 2, "getPrimaryKeys: two columns, got " + pk);
            check(pk.get(0).get("COLUMN_NAME").equals("w_id") && pk.get(0).get("KEY_SEQ").equals("1")
                    && pk.get(1).get("COLUMN_NAME").equals("o_id") && pk.get(1).get("KEY_SEQ").equals("2"),
                    "getPrimaryKeys: key order " + pk);
            check("jm_order_pkey".equals(pk.get(0).get("PK_NAME")), "getPrimaryKeys: PK_NAME");

            List<Map<String, String>> idx = rows(md.getIndexInfo(null, "public", "jm_order", false, false));
            List<String> seen = new ArrayList<>();
            for (Map<String, String> r : idx) {
                seen.add(r.get("INDEX_NAME") + ":" + r.get("NON_UNIQUE") + ":" + r.get("ORDINAL_POSITION") + ":"
                        + r.get("COLUMN_NAME") + ":" + r.get("ASC_OR_DESC") + ":" + r.get("TYPE"));
            }
            check(seen.equals(List.of(
                    "jm_order_pkey:f:1:w_id:A:3", "jm_order_pkey:f:2:o_id:A:3",
                    "jm_order_name:t:1:c_name:A:3", "jm_order_name:t:2:w_id:A:3")),
                    "getIndexInfo: " + seen);
            List<Map<String, String>> unique = rows(md.getIndexInfo(null, "public", "jm_order", true, false));
            check(unique.size() == 2, "getIndexInfo unique only: " + unique.size());

            List<String> schemas = new ArrayList<>();
            for (Map<String, String> r : rows(md.getSchemas())) {
                schemas.add(r.get("TABLE_SCHEM"));
            }
            check(schemas.contains("public") && schemas.contains("pg_catalog")
                    && schemas.contains("information_schema"), "getSchemas: " + schemas);
            List<String> sorted = new ArrayList<>(schemas);
            Collections.sort(sorted);
            check(sorted.equals(schemas), "getSchemas: in name order");

            check(rows(md.getImportedKeys(null, "public", "jm_order")).isEmpty(), "getImportedKeys: no foreign keys");
            check(rows(md.getExportedKeys(null, "public", "jm_line")).isEmpty(), "getExportedKeys: none refer to jm_line");
            // PKTABLE:PKCOLUMN -> FKTABLE:FKCOLUMN KEY_SEQ UPDATE_RULE DELETE_RULE FK_NAME PK_NAME DEFERRABILITY
            List<String> imported = new ArrayList<>();
            for (Map<String, String> r : rows(md.getImportedKeys(null, "public", "jm_line"))) {
                imported.add(r.get("PKTABLE_NAME") + ":" + r.get("PKCOLUMN_NAME") + "->" + r.get("FKTABLE_NAME") + ":"
                        + r.get("FKCOLUMN_NAME") + " " + r.get("KEY_SEQ") + " " + r.get("UPDATE_RULE") + " "
                        + r.get("DELETE_RULE") + " " + r.get("FK_NAME") + " " + r.get("PK_NAME") + " "
                        + r.get("DEFERRABILITY"));
            }
            check(imported.equals(List.of(
                    "jm_item:i_id->jm_line:l_i_id 1 3 1 jm_line_l_i_id_fkey jm_item_pkey 7",
                    "jm_order:w_id->jm_line:l_w_id 1 3 0 jm_line_order_fk jm_order_pkey 7",
                    "jm_order:o_id->jm_line:l_o_id 2 3 0 jm_line_order_fk jm_order_pkey 7")),
                    "getImportedKeys: " + imported);
            List<String> exported = new ArrayList<>();
            for (Map<String, String> r : rows(md.getExportedKeys(null, "public", "jm_order"))) {
                exported.add(r.get("FKTABLE_NAME") + ":" + r.get("FKCOLUMN_NAME") + ":" + r.get("KEY_SEQ"));
            }
            check(exported.equals(List.of("jm_line:l_w_id:1", "jm_line:l_o_id:2")), "getExportedKeys: " + exported);

            Set<String> types = new HashSet<>();
            for (Map<String, String> r : rows(md.getTypeInfo())) {
                types.add(r.get("TYPE_NAME") + ":" + r.get("DATA_TYPE"));
            }
            check(types.contains("int4:4") && types.contains("numeric:2") && types.contains("varchar:12"),
                    "getTypeInfo: int4, numeric, varchar");

            c.setAutoCommit(false);
            try (PreparedStatement p = c.prepareStatement("INSERT INTO jm_item (i_id, price, born) VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 1000; i++) {
                    p.setInt(1, i);
                    p.setDouble(2, i * 0.5);
                    p.setDate(3, java.sql.Date.valueOf("2024-02-" + (10 + i % 10)));
                    p.addBatch();
                }
                int[] counts = p.executeBatch();
                check(counts.length == 1000, "batch: 1000 counts, got " + counts.length);
                for (int n : counts) {
                    check(n == 1 || n == Statement.SUCCESS_NO_INFO, "batch: count " + n);
                }
            }
            c.commit();
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT count(*), sum(i_id), max(price) FROM jm_item")) {
                check(rs.next(), "count row");
                check(rs.getLong(1) == 1000 && rs.getLong(2) == 500500 && rs.getDouble(3) == 500.0,
                        "batch rows: " + rs.getLong(1) + " " + rs.getLong(2) + " " + rs.getDouble(3));
            }
            // A batch whose last row refers to no item: the driver's batch
            // fails with the foreign key's SQLSTATE and nothing of it stays.
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO jm_order (w_id, o_id) VALUES (?, ?)")) {
                p.setInt(1, 1);
                p.setLong(2, 1);
                p.executeUpdate();
            }
            c.commit();
            try (PreparedStatement p = c.prepareStatement(
                    "INSERT INTO jm_line (l_w_id, l_o_id, l_number, l_i_id) VALUES (?, ?, ?, ?)")) {
                for (int n = 1; n <= 3; n++) {
                    p.setInt(1, 1);
                    p.setLong(2, 1);
                    p.setInt(3, n);
                    p.setInt(4, n == 3 ? 5000 : n);
                    p.addBatch();
                }
                p.executeBatch();
                check(false, "a batch that breaks a foreign key must fail");
            } catch (SQLException e) {
                SQLException cause = e.getNextException() != null ? e.getNextException() : e;
                check("23503".equals(cause.getSQLState()), "foreign key batch: SQLSTATE " + cause.getSQLState());
                c.rollback();
            }
            try (Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT count(*) FROM jm_line")) {
                check(rs.next() && rs.getLong(1) == 0, "foreign key batch: no rows stayed");
            }
            c.setAutoCommit(true);
            // SHOW ALL through the extended protocol: name, setting, description.
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SHOW ALL;")) {
                Map<String, String> settings = new HashMap<>();
                while (rs.next()) {
                    settings.put(rs.getString("name"), rs.getString("setting"));
                    rs.getString("description");
                }
                check("UTF8".equals(settings.get("client_encoding")), "SHOW ALL: client_encoding, got " + settings.get("client_encoding"));
                check("read committed".equals(settings.get("default_transaction_isolation")),
                        "SHOW ALL: default_transaction_isolation, got " + settings.get("default_transaction_isolation"));
            }
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE jm_line");
                s.execute("DROP TABLE jm_order");
                s.execute("DROP TABLE jm_item");
            }
        }
        System.out.println("ok");
    }
}
