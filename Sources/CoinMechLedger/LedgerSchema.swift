import GRDB

/// The ledger's tables and their migrations (GRDB's `DatabaseMigrator`; applied ones are
/// listed in `grdb_migrations`). docs/LEDGER.md describes every column.
enum LedgerSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE events (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    time REAL NOT NULL,
                    kind TEXT NOT NULL,
                    source TEXT,
                    epoch INTEGER,
                    device_seq INTEGER,
                    diameter_mm REAL,
                    weight_g REAL,
                    thickness_mm REAL,
                    channel INTEGER,
                    verdict TEXT CHECK (verdict IN ('accept', 'reject')),
                    currency TEXT,
                    denomination TEXT,
                    value_minor INTEGER,
                    link TEXT,
                    reason TEXT,
                    message TEXT,
                    chain_generation INTEGER,
                    detail TEXT
                );
                CREATE UNIQUE INDEX events_reading ON events(source, epoch, device_seq) WHERE kind = 'decision';
                CREATE INDEX events_kind ON events(kind, seq);
                CREATE TABLE totals (
                    period TEXT NOT NULL CHECK (period IN ('current', 'lifetime')),
                    currency TEXT NOT NULL,
                    denomination TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    value_minor INTEGER NOT NULL,
                    weight_g REAL NOT NULL,
                    PRIMARY KEY (period, currency, denomination)
                ) WITHOUT ROWID;
                CREATE TABLE sources (
                    source TEXT PRIMARY KEY,
                    epoch INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
        // Credit on confirmation: an accept is pending until the mech stores the coin; the
        // settling event points at its decision, once; epochs know the mech's boot number;
        // the chain generation is kept, not recomputed from the events at every start.
        migrator.registerMigration("v2-credit-on-confirmation") { db in
            try db.execute(sql: """
                ALTER TABLE events ADD COLUMN state TEXT CHECK (state IN ('pending', 'credited', 'returned', 'unconfirmed'));
                ALTER TABLE events ADD COLUMN ref_seq INTEGER;
                UPDATE events SET state = 'credited' WHERE kind = 'decision' AND verdict = 'accept';
                CREATE INDEX events_open ON events(state, seq) WHERE state IN ('pending', 'unconfirmed');
                CREATE UNIQUE INDEX events_settles ON events(ref_seq) WHERE ref_seq IS NOT NULL;
                CREATE TABLE epochs (
                    source TEXT NOT NULL,
                    epoch INTEGER NOT NULL,
                    boot INTEGER,
                    PRIMARY KEY (source, epoch)
                ) WITHOUT ROWID;
                INSERT INTO epochs (source, epoch) SELECT source, epoch FROM sources;
                CREATE TABLE meta (
                    key TEXT PRIMARY KEY,
                    value INTEGER NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO meta (key, value) SELECT 'chain_generation', COALESCE(MAX(g), 0) FROM (
                    SELECT MAX(chain_generation) AS g FROM events
                    UNION ALL SELECT MAX(CAST(json_extract(detail, '$.chain_generation') AS INTEGER)) FROM events WHERE kind = 'startup'
                    UNION ALL SELECT MAX(CAST(json_extract(detail, '$.generation') AS INTEGER)) FROM events WHERE kind = 'reload'
                );
                """)
        }
        // A collection's rows in a table of their own, not as JSON text inside the event's JSON.
        migrator.registerMigration("v3-collections") { db in
            try db.execute(sql: """
                CREATE TABLE collections (
                    collect_seq INTEGER NOT NULL REFERENCES events(seq),
                    state TEXT NOT NULL CHECK (state IN ('credited', 'unconfirmed')),
                    currency TEXT NOT NULL,
                    denomination TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    value_minor INTEGER NOT NULL,
                    weight_g REAL NOT NULL,
                    PRIMARY KEY (collect_seq, state, currency, denomination)
                ) WITHOUT ROWID;
                INSERT INTO collections (collect_seq, state, currency, denomination, count, value_minor, weight_g)
                    SELECT e.seq, 'credited', json_extract(r.value, '$.currency'), json_extract(r.value, '$.denomination'),
                           json_extract(r.value, '$.count'), json_extract(r.value, '$.value_minor'), json_extract(r.value, '$.weight_g')
                    FROM events e, json_each(json_extract(e.detail, '$.collected')) r
                    WHERE e.kind = 'collect' AND json_valid(json_extract(e.detail, '$.collected'));
                INSERT INTO collections (collect_seq, state, currency, denomination, count, value_minor, weight_g)
                    SELECT e.seq, 'unconfirmed', json_extract(r.value, '$.currency'), json_extract(r.value, '$.denomination'),
                           json_extract(r.value, '$.count'), json_extract(r.value, '$.value_minor'), json_extract(r.value, '$.weight_g')
                    FROM events e, json_each(json_extract(e.detail, '$.unconfirmed')) r
                    WHERE e.kind = 'collect' AND json_valid(json_extract(e.detail, '$.unconfirmed'));
                UPDATE events SET detail = json_remove(detail, '$.collected', '$.unconfirmed') WHERE kind = 'collect';
                """)
        }
        // ccTalk coin acceptors: where each one's event counter stood when its last batch was
        // recorded, written in the same transaction as the batch (docs/PROTOCOL.md part three).
        migrator.registerMigration("v4-cctalk-counters") { db in
            try db.execute(sql: """
                CREATE TABLE cctalk_counters (
                    source TEXT NOT NULL,
                    address INTEGER NOT NULL,
                    epoch INTEGER NOT NULL,
                    event_number INTEGER NOT NULL,
                    last_results BLOB NOT NULL,
                    serial_number INTEGER,
                    expects_restart INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (source, address)
                ) WITHOUT ROWID;
                """)
        }
        // Late evidence: an unconfirmed coin the mech's journal later says was stored is
        // credited, a `coin` event beside its `coin_unconfirmed`. A decision may then be named by
        // two settling events, never two of one kind.
        migrator.registerMigration("v5-late-evidence") { db in
            try db.execute(sql: """
                DROP INDEX events_settles;
                CREATE UNIQUE INDEX events_settles ON events(ref_seq, kind) WHERE ref_seq IS NOT NULL;
                """)
        }
        // SQLite codes an IN list of more than two constants with a temporary b-tree, built
        // each time the statement runs: the `state` CHECK made every insert and update of an
        // event open, fill and close one (its pager, its zeroed pages), about a quarter of the
        // instructions of a coin. The same constraint as comparisons costs a few. A CHECK's
        // text does not touch the stored rows, so it is changed in place, as SQLite documents
        // ("Making Other Kinds Of Table Schema Changes", lang_altertable.html).
        migrator.registerMigration("v6-state-check-as-comparisons") { db in
            let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
            try db.execute(sql: "PRAGMA writable_schema = ON")
            try db.execute(sql: "UPDATE sqlite_schema SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'events'",
                           arguments: [stateCheckAsList, stateCheck])
            try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
            try db.execute(sql: "PRAGMA writable_schema = OFF")
            guard try String.fetchOne(db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'events'")?.contains(stateCheck) == true else {
                throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the events table does not have the state CHECK this version expects")
            }
        }
        // Money out: each payout and its DISPENSE steps, journalled before any coin moves,
        // keyed by the asker's request id so that a repeat is answered, never paid again.
        migrator.registerMigration("v7-payouts") { db in
            try db.execute(sql: """
                CREATE TABLE payouts (
                    request_id TEXT PRIMARY KEY,
                    source TEXT NOT NULL,
                    requested_seq INTEGER NOT NULL REFERENCES events(seq),
                    currency TEXT NOT NULL,
                    amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
                    by TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state = 'open' OR state = 'done' OR state = 'partial' OR state = 'failed'),
                    paid_minor INTEGER NOT NULL DEFAULT 0,
                    debt_minor INTEGER NOT NULL DEFAULT 0,
                    settled_seq INTEGER REFERENCES events(seq),
                    device TEXT
                ) WITHOUT ROWID;
                CREATE INDEX payouts_open ON payouts(source) WHERE state = 'open';
                CREATE TABLE payout_steps (
                    request_id TEXT NOT NULL REFERENCES payouts(request_id),
                    step INTEGER NOT NULL,
                    dispensing_seq INTEGER NOT NULL REFERENCES events(seq),
                    type INTEGER NOT NULL,
                    coin_id TEXT,
                    value_minor INTEGER NOT NULL,
                    count INTEGER NOT NULL CHECK (count BETWEEN 1 AND 15),
                    tube_before INTEGER NOT NULL,
                    PRIMARY KEY (request_id, step)
                ) WITHOUT ROWID;
                """)
        }
        // Hoppers: the step's event counter mark (a hopper's dispense was taken if its counter
        // moved past it), and each unit's level, which a hopper cannot count itself.
        migrator.registerMigration("v8-inventory") { db in
            try db.execute(sql: """
                ALTER TABLE payout_steps ADD COLUMN device_mark INTEGER;
                CREATE TABLE inventory (
                    source TEXT NOT NULL,
                    unit INTEGER NOT NULL,
                    coin_id TEXT,
                    value_minor INTEGER NOT NULL CHECK (value_minor > 0),
                    level INTEGER NOT NULL,
                    updated_seq INTEGER NOT NULL REFERENCES events(seq),
                    PRIMARY KEY (source, unit)
                ) WITHOUT ROWID;
                """)
        }
        // The alloy axis, where the mech measures it: conductivity at its low and high
        // frequency (% IACS) and the apparent permeability, beside diameter, weight and thickness.
        migrator.registerMigration("v9-alloy-axis") { db in
            try db.execute(sql: """
                ALTER TABLE events ADD COLUMN conductivity_low_iacs REAL;
                ALTER TABLE events ADD COLUMN conductivity_high_iacs REAL;
                ALTER TABLE events ADD COLUMN permeability REAL;
                """)
        }
        // Each hopper step names the hopper that was to pay it: one exchanged mid-payout is
        // told apart from the one before it.
        migrator.registerMigration("v10-step-device") { db in
            try db.execute(sql: "ALTER TABLE payout_steps ADD COLUMN device TEXT")
        }
        // A value step (MDB level 3's alternative payout: the changer chooses the coins) keeps
        // every tube's count before it, comma-separated: their falls are what it paid.
        migrator.registerMigration("v11-value-steps") { db in
            try db.execute(sql: "ALTER TABLE payout_steps ADD COLUMN tubes_before TEXT")
        }
        // A customer's credit held by the daemon: a balance per source, account and currency
        // that coins raise and sales, change and expiry lower, never below 0; each sale, refund
        // and expiry once per request id; the payout that paid credit back names its account.
        migrator.registerMigration("v12-credit") { db in
            try db.execute(sql: """
                CREATE TABLE credit_accounts (
                    source TEXT NOT NULL,
                    account TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    balance_minor INTEGER NOT NULL DEFAULT 0 CHECK (balance_minor >= 0),
                    opened_seq INTEGER NOT NULL REFERENCES events(seq),
                    moved_seq INTEGER NOT NULL,
                    moved_time REAL NOT NULL,
                    PRIMARY KEY (source, account, currency)
                ) WITHOUT ROWID;
                CREATE TABLE credit_moves (
                    request_id TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind = 'spent' OR kind = 'refunded' OR kind = 'expired'),
                    source TEXT NOT NULL,
                    account TEXT NOT NULL,
                    currency TEXT NOT NULL,
                    amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
                    item TEXT,
                    by TEXT NOT NULL,
                    seq INTEGER NOT NULL REFERENCES events(seq),
                    balance_after INTEGER NOT NULL CHECK (balance_after >= 0),
                    PRIMARY KEY (request_id, kind)
                ) WITHOUT ROWID;
                ALTER TABLE payouts ADD COLUMN credit_account TEXT;
                """)
        }
        return migrator
    }

    /// The `state` CHECK as version 2 wrote it, and as it is since version 6.
    static let stateCheckAsList = "CHECK (state IN ('pending', 'credited', 'returned', 'unconfirmed'))"
    static let stateCheck = "CHECK (state = 'pending' OR state = 'credited' OR state = 'returned' OR state = 'unconfirmed')"
}
