# Row-by-row comparison of an imported database with the server's tables, with the sqlite3 shell.

# compare_tables SERVER_DB APP_DB: every data table of APP_DB (all but _seedsync_* and sqlite_*)
# must hold exactly the rows of the server's table of the same name: same count, and no row,
# revision column included, in one that is not in the other. Prints one line per table and
# returns 1 when any differs.
compare_tables() {
    local server=$1 app=$2 status=0 table columns result app_rows server_rows only_app only_server
    local tables
    tables=$(sqlite3 "$app" "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\_%' ESCAPE '\' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    if [ -z "$tables" ]; then
        echo "no tables in $app" >&2
        return 1
    fi
    for table in $tables; do
        columns=$(sqlite3 "$app" "SELECT group_concat('\"' || name || '\"', ', ') FROM pragma_table_info('$table')")
        result=$(sqlite3 "$app" "ATTACH '$server' AS server;
            SELECT (SELECT count(*) FROM main.\"$table\"), (SELECT count(*) FROM server.\"$table\"),
                   (SELECT count(*) FROM (SELECT $columns FROM main.\"$table\" EXCEPT SELECT $columns FROM server.\"$table\")),
                   (SELECT count(*) FROM (SELECT $columns FROM server.\"$table\" EXCEPT SELECT $columns FROM main.\"$table\"));")
        IFS='|' read -r app_rows server_rows only_app only_server <<<"$result"
        if [ "$app_rows" = "$server_rows" ] && [ "$only_app" = 0 ] && [ "$only_server" = 0 ]; then
            echo "  $table: $app_rows rows, equal to the server's"
        else
            echo "  $table: DIFFERS: $app_rows rows here, $server_rows on the server; $only_app only here, $only_server only on the server"
            status=1
        fi
    done
    return $status
}
