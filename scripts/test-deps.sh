#!/usr/bin/env bash
# Installs what the wire-protocol tests run against real clients, from the
# distribution's packages and the language registries, when missing:
#   psql (postgresql-client), python3 + psycopg 3 (and psycopg2,
#   SQLAlchemy 2, pandas for the application tests), java + the PostgreSQL
#   JDBC driver (into ~/.m2, where crates/server/tests/clients.rs looks),
#   and PostgreSQL 15 itself for the conformance test
#   (crates/cli/tests/conformance.rs, through scripts/postgres-baseline.sh)
#   and for its pgbench (crates/server/tests/pgbench.rs).
set -euo pipefail

JDBC_VERSION=42.7.4
JDBC_JAR="$HOME/.m2/repository/org/postgresql/postgresql/$JDBC_VERSION/postgresql-$JDBC_VERSION.jar"

apt_install() {
  command -v apt-get >/dev/null 2>&1 || { echo "need $* (no apt-get here)" >&2; return 1; }
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  if [ -z "${APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq
    APT_UPDATED=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v psql >/dev/null 2>&1 || apt_install postgresql-client
[ -x /usr/lib/postgresql/15/bin/initdb ] || apt_install postgresql-15
command -v python3 >/dev/null 2>&1 || apt_install python3 python3-pip

if ! python3 -c "import psycopg" >/dev/null 2>&1; then
  python3 -m pip install --quiet "psycopg[binary]" 2>/dev/null \
    || python3 -m pip install --quiet --user --break-system-packages "psycopg[binary]" 2>/dev/null \
    || apt_install python3-psycopg
fi

# The applications' libraries of crates/server/tests/clients/sqlalchemy_app.py.
if ! python3 -c "import sqlalchemy, pandas, psycopg2; assert sqlalchemy.__version__ >= '2'" >/dev/null 2>&1; then
  python3 -m pip install --quiet "sqlalchemy>=2" pandas psycopg2-binary 2>/dev/null \
    || python3 -m pip install --quiet --user --break-system-packages "sqlalchemy>=2" pandas psycopg2-binary
fi

command -v java >/dev/null 2>&1 || apt_install default-jdk-headless
if [ ! -f "$JDBC_JAR" ]; then
  if command -v mvn >/dev/null 2>&1; then
    mvn -q dependency:get -Dartifact="org.postgresql:postgresql:$JDBC_VERSION" >/dev/null
  else
    mkdir -p "$(dirname "$JDBC_JAR")"
    curl -fsSL -o "$JDBC_JAR" \
      "https://repo1.maven.org/maven2/org/postgresql/postgresql/$JDBC_VERSION/postgresql-$JDBC_VERSION.jar"
  fi
fi
