// The PostgreSQL JDBC driver with prepareThreshold=1 (every statement
// prepared server-side from its first execution, as JDBC applications
// that set it do) against ndpdb and PostgreSQL in one run: prepared
// statements across DROP/CREATE of the tables they read and write, ALTER
// TABLE ADD/DROP COLUMN under a prepared SELECT *, indexes and views
// made again, and queries without FROM. The transcripts of both must be
// equal.
//
// java -cp postgresql.jar StalePlans.java NDPDB_CONNINFO POSTGRES_CONNINFO
// (libpq-style "host=… port=… user=… dbname=…"; prints "ok" when equal)

import java.sql.*;
import java.util.*;

public class StalePlans {
    static String url(String conninfo) {
        Map<String, String> kv = new HashMap<>();
        for (String part : conninfo.trim().split("\\s+")) {
            int eq = part.indexOf('=');
            kv.put(part.substring(0, eq), part.substring(eq + 1));
        }
        return "jdbc:postgresql://" + kv.getOrDefault("host", "127.0.0.1") + ":" + kv.get("port") + "/"
                + kv.getOrDefault("dbname", "postgres") + "?user=" + kv.getOrDefault("user", "postgres")
                + "&prepareThreshold=1";
    }

    /** One connection per name; every outcome goes to one transcript. */
    static class Client implements AutoCloseable {
        final String url;
        final Map<String, Connection> conns = new HashMap<>();
        final Map<String, PreparedStatement> statements = new HashMap<>();
        final List<String> lines = new ArrayList<>();

        Client(String url) {
            this.url = url;
        }

        Connection conn(String name) throws SQLException {
            Connection c = conns.get(name);
            if (c == null) {
                c = DriverManager.getConnection(url);
                conns.put(name, c);
            }
            return c;
        }

        /** Runs `sql` through the connection's one PreparedStatement for
         *  that text (made once, as applications keep them). */
        void run(String name, String sql, Object... params) throws SQLException {
            lines.add(name + "> " + sql + " " + Arrays.toString(params));
            String key = name + "\u0000" + sql;
            PreparedStatement ps = statements.get(key);
            if (ps == null) {
                ps = conn(name).prepareStatement(sql);
                statements.put(key, ps);
            }
            try {
                for (int i = 0; i < params.length; i++) {
                    ps.setObject(i + 1, params[i]);
                }
                if (ps.execute()) {
                    StringBuilder out = new StringBuilder("  rows");
                    try (ResultSet rs = ps.getResultSet()) {
                        int n = rs.getMetaData().getColumnCount();
                        while (rs.next()) {
                            out.append(" (");
                            for (int i = 1; i <= n; i++) {
                                out.append(i > 1 ? ", " : "").append(rs.getString(i));
                            }
                            out.append(")");
                        }
                    }
                    lines.add(out.toString());
                } else {
                    lines.add("  count " + ps.getUpdateCount());
                }
            } catch (SQLException e) {
                lines.add("  ERROR " + e.getSQLState());
            }
        }

        public void close() throws SQLException {
            for (Connection c : conns.values()) {
                c.close();
            }
        }
    }

    static void dropAll(Client c) throws SQLException {
        c.run("setup", "DROP VIEW IF EXISTS jv");
        c.run("setup", "DROP TABLE IF EXISTS ja");
        c.run("setup", "DROP TABLE IF EXISTS jb");
    }

    static void cycles(Client c, boolean withIndex) throws SQLException {
        for (int cycle = 0; cycle < 8; cycle++) {
            c.run("a", "DROP TABLE IF EXISTS ja");
            c.run("a", "DROP TABLE IF EXISTS jb");
            c.run("a", "CREATE TABLE ja (pk INT PRIMARY KEY, v INT)");
            c.run("a", "CREATE TABLE jb (pk INT PRIMARY KEY, v INT)");
            if (withIndex) {
                c.run("a", "CREATE INDEX jb_v ON jb (v)");
            }
            c.run("a", "INSERT INTO ja VALUES (?, 1)", cycle);
            c.run("a", "INSERT INTO jb SELECT * FROM ja");
            c.run("a", "SELECT count(*) FROM jb");
            c.run("a", "SELECT pk FROM jb WHERE v = ?", 1);
            c.run("a", "DELETE FROM jb WHERE pk = ?", cycle);
            c.run("a", "SELECT count(*) FROM jb");
        }
    }

    static void shapes(Client c) throws SQLException {
        c.run("a", "CREATE TABLE ja (pk INT PRIMARY KEY, v INT)");
        c.run("a", "INSERT INTO ja VALUES (?, ?)", 1, 10);
        c.run("a", "CREATE VIEW jv AS SELECT pk, v FROM ja WHERE v > 5");
        for (int i = 0; i < 3; i++) {
            c.run("a", "SELECT * FROM ja ORDER BY pk");
            c.run("a", "SELECT pk FROM jv ORDER BY pk");
            c.run("a", "INSERT INTO ja (pk, v) VALUES (?, ?)", 10 + i, i);
        }
        c.run("b", "ALTER TABLE ja ADD COLUMN w TEXT");
        c.run("a", "SELECT * FROM ja ORDER BY pk");
        c.run("a", "SELECT * FROM ja ORDER BY pk");
        c.run("a", "INSERT INTO ja (pk, v) VALUES (?, ?)", 20, 20);
        c.run("b", "CREATE OR REPLACE VIEW jv AS SELECT pk, v FROM ja WHERE v < 5");
        c.run("a", "SELECT pk FROM jv ORDER BY pk");
        c.run("b", "ALTER TABLE ja DROP COLUMN w");
        c.run("a", "SELECT * FROM ja ORDER BY pk");
        for (String sql : new String[] {"SELECT count(*)", "SELECT NULLIF(-COUNT(*), 5) + 54",
                "SELECT 1 WHERE false", "SELECT count(*) WHERE ? = 1"}) {
            for (int i = 0; i < 2; i++) {
                if (sql.contains("?")) {
                    c.run("a", sql, i);
                } else {
                    c.run("a", sql);
                }
            }
        }
    }

    interface Scenario {
        void run(Client c) throws SQLException;
    }

    static List<String> transcript(String url, Scenario s) throws SQLException {
        try (Client c = new Client(url)) {
            dropAll(c);
            c.lines.clear();
            s.run(c);
            List<String> lines = new ArrayList<>(c.lines);
            dropAll(c);
            return lines;
        }
    }

    public static void main(String[] args) throws Exception {
        String ndpdb = url(args[0]);
        String postgres = url(args[1]);
        Map<String, Scenario> scenarios = new LinkedHashMap<>();
        scenarios.put("cycles", c -> cycles(c, false));
        scenarios.put("cycles with an index", c -> cycles(c, true));
        scenarios.put("result shapes, views, no FROM", StalePlans::shapes);
        boolean failed = false;
        for (Map.Entry<String, Scenario> e : scenarios.entrySet()) {
            List<String> ours = transcript(ndpdb, e.getValue());
            List<String> theirs = transcript(postgres, e.getValue());
            if (!ours.equals(theirs)) {
                failed = true;
                System.out.println("--- " + e.getKey() + ": ndpdb and PostgreSQL differ");
                for (int i = 0; i < Math.max(ours.size(), theirs.size()); i++) {
                    String a = i < theirs.size() ? theirs.get(i) : "";
                    String b = i < ours.size() ? ours.get(i) : "";
                    System.out.println((a.equals(b) ? "  " : "! ") + a + (a.equals(b) ? "" : "   | ndpdb: " + b));
                }
            } else {
                System.out.println(e.getKey() + ": " + ours.size() + " lines match");
            }
        }
        if (failed) {
            System.exit(1);
        }
        System.out.println("ok");
    }
}
