-- duroxide-node: the record of the functions the fast paths installed in this
-- schema, so that cleanup and `duroxide-node migrate --prune` find them.
-- `last_seen_at` is refreshed by every live provider that uses the function
-- (at connect and then hourly); prune drops only functions of no current
-- package version that no provider has used for a while.
CREATE TABLE IF NOT EXISTS {schema}._duroxide_node_functions (
    signature TEXT PRIMARY KEY,
    file TEXT NOT NULL,
    sql_fingerprint TEXT NOT NULL,
    package_version TEXT NOT NULL,
    installed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_seen_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
