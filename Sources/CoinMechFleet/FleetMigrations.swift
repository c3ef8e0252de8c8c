import Foundation

/// The fleet database's schema, as numbered steps applied in order once each
/// (`schema_migrations`), each in its own transaction. A step is never edited once released: a
/// change is a new step. `coinmech-fleet migrate` applies them; the service does at start.
public enum FleetMigrations {
    public struct Step: Sendable {
        public var version: Int
        public var name: String
        public var sql: String

        /// One statement at a time (postgres-nio's extended protocol takes one): each ends with
        /// `;` at the end of its line.
        public var statements: [String] {
            sql.components(separatedBy: ";\n").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                .map { $0.hasSuffix(";") ? String($0.dropLast()) : $0 }.filter { !$0.isEmpty && !$0.split(separator: "\n").allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--") } }
        }
    }

    public static let steps: [Step] = [
        Step(version: 1, name: "events, cabinets, collections, alerts, operators", sql: """
            CREATE TABLE cabinets (
                cabinet text PRIMARY KEY,
                site text NOT NULL,
                first_seen double precision NOT NULL,
                -- F7: every seq 1 … contiguous_seq stored or declared missing; moved in the
                -- transaction that stores the events.
                contiguous_seq bigint NOT NULL DEFAULT 0,
                state text NOT NULL DEFAULT 'unknown' CHECK (state IN ('unknown', 'online', 'offline')),
                state_since double precision,
                state_reason text,
                bridge_version text,
                daemon_version text,
                status jsonb,
                status_time double precision,
                totals jsonb,
                totals_time double precision
            );
            -- One row per ledger event, keyed by its identity: a copy is dropped by the key (F4).
            CREATE TABLE events (
                cabinet text NOT NULL,
                seq bigint NOT NULL,
                kind text NOT NULL,
                time double precision NOT NULL,
                received double precision NOT NULL,
                event jsonb NOT NULL,
                -- Money is counted from these (F4): kept as columns for the totals' queries.
                currency text GENERATED ALWAYS AS (event->>'currency') STORED,
                denomination text GENERATED ALWAYS AS (event->>'denomination') STORED,
                value_minor bigint GENERATED ALWAYS AS ((event->>'value_minor')::bigint) STORED,
                verdict text GENERATED ALWAYS AS (event->>'verdict') STORED,
                PRIMARY KEY (cabinet, seq)
            );
            CREATE INDEX events_cabinet_kind ON events (cabinet, kind, seq);
            CREATE INDEX events_credit_time ON events (time) WHERE kind = 'coin';
            -- F8: seqs the cabinet's ledger does not hold, as its bridge said.
            CREATE TABLE missing_events (
                cabinet text NOT NULL,
                seq_from bigint NOT NULL,
                seq_to bigint NOT NULL,
                recorded double precision NOT NULL,
                PRIMARY KEY (cabinet, seq_from)
            );
            -- F5: a copy that differs from the stored event (kind or time): the ledger was replaced.
            CREATE TABLE event_conflicts (
                cabinet text NOT NULL,
                seq bigint NOT NULL,
                received double precision NOT NULL,
                copy jsonb NOT NULL,
                PRIMARY KEY (cabinet, seq, received)
            );
            -- What an operator counted at a collection, beside the ledger's figure.
            CREATE TABLE collections (
                id bigserial PRIMARY KEY,
                cabinet text NOT NULL REFERENCES cabinets,
                time double precision NOT NULL,
                by text NOT NULL,
                currency text NOT NULL,
                counted_minor bigint NOT NULL,
                ledger_minor bigint NOT NULL,
                -- The cabinet's `collect` event compared with, or null: its cash box at the time.
                ledger_seq bigint,
                difference_minor bigint GENERATED ALWAYS AS (counted_minor - ledger_minor) STORED
            );
            CREATE TABLE alerts (
                id bigserial PRIMARY KEY,
                cabinet text NOT NULL,
                kind text NOT NULL,
                detail text NOT NULL,
                opened double precision NOT NULL,
                closed double precision,
                acked_by text,
                acked_at double precision
            );
            CREATE UNIQUE INDEX alerts_one_open ON alerts (cabinet, kind) WHERE closed IS NULL;
            CREATE TABLE commands (
                id text PRIMARY KEY,
                cabinet text NOT NULL,
                name text NOT NULL,
                args jsonb NOT NULL,
                by text NOT NULL,
                sent double precision NOT NULL,
                reply jsonb,
                outcome text
            );
            CREATE TABLE operators (
                name text PRIMARY KEY,
                password_hash text NOT NULL,
                role text NOT NULL CHECK (role IN ('operator', 'admin'))
            );
            """),
        Step(version: 2, name: "credit per cabinet, hour and denomination", sql: """
            -- Totals per cabinet, period and denomination (F4: money from `coin` events only).
            CREATE VIEW credit_by_hour AS
                SELECT cabinet, floor(time / 3600) * 3600 AS hour, currency, denomination,
                       count(*) AS coins, sum(value_minor) AS value_minor
                FROM events WHERE kind = 'coin' GROUP BY cabinet, 2, currency, denomination;
            CREATE VIEW credit_by_day AS
                SELECT cabinet, floor(time / 86400) * 86400 AS day, currency, denomination,
                       count(*) AS coins, sum(value_minor) AS value_minor
                FROM events WHERE kind = 'coin' GROUP BY cabinet, 2, currency, denomination;
            """),
        Step(version: 3, name: "F5's hold kept across restarts", sql: """
            -- Where a cabinet's ack stays while a ledger_conflict is open; null when none.
            ALTER TABLE cabinets ADD COLUMN ack_held_at bigint;
            """),
        Step(version: 4, name: "B1a's hearing kept across restarts", sql: """
            -- A cabinet's last live word: on the wall clock, and on the listening clock of the
            -- instance that heard it (a row of another instance's clock says nothing on this one's).
            CREATE TABLE hearing (
                cabinet text PRIMARY KEY,
                instance text NOT NULL,
                heard_at double precision NOT NULL,
                heard_listened double precision NOT NULL
            );
            -- Seconds each fleet instance has been connected to its broker, over all its runs.
            CREATE TABLE listening (
                instance text PRIMARY KEY,
                listened double precision NOT NULL
            );
            """),
        Step(version: 5, name: "the customer's credit per cabinet, kept as events are stored", sql: """
            -- The credit's moves per cabinet, kind and currency (sales, refunds, escrow returns,
            -- expiries): added to in the transaction that stores their events, so /metrics reads
            -- a row per figure instead of summing the events at every scrape.
            CREATE TABLE credit_tallies (
                cabinet text NOT NULL,
                kind text NOT NULL,
                currency text NOT NULL,
                moves bigint NOT NULL,
                value_minor numeric NOT NULL,
                PRIMARY KEY (cabinet, kind, currency)
            );
            -- Each credit account's last known balance: the balance_minor of its latest credit
            -- event stored (seq), and the coins of its source stored after that event.
            CREATE TABLE credit_balances (
                cabinet text NOT NULL,
                account text NOT NULL,
                currency text NOT NULL,
                seq bigint NOT NULL,
                balance_minor bigint NOT NULL,
                coins_minor numeric NOT NULL,
                PRIMARY KEY (cabinet, account, currency)
            );
            INSERT INTO credit_tallies (cabinet, kind, currency, moves, value_minor)
                SELECT cabinet, kind, coalesce(currency, '?'), count(*), coalesce(sum(value_minor), 0) FROM events
                WHERE kind IN ('credit_spent', 'credit_refunded', 'credit_returned', 'credit_expired') GROUP BY 1, 2, 3;
            INSERT INTO credit_balances (cabinet, account, currency, seq, balance_minor, coins_minor)
                SELECT l.cabinet, l.account, l.currency, l.seq, l.balance,
                       coalesce((SELECT sum(c.value_minor) FROM events c WHERE c.cabinet = l.cabinet AND c.kind = 'coin' AND c.seq > l.seq
                                 AND c.currency = l.currency AND c.event->>'source' = l.account), 0)
                FROM (SELECT DISTINCT ON (cabinet, account, currency) cabinet, account, currency, seq, balance
                      FROM (SELECT cabinet, coalesce(event->'detail'->>'account', event->>'source', '?') AS account, coalesce(currency, '?') AS currency, seq,
                                   CASE WHEN event->'detail'->>'balance_minor' ~ '^[0-9]{1,15}$' THEN (event->'detail'->>'balance_minor')::bigint ELSE 0 END AS balance
                            FROM events WHERE kind IN ('credit_opened', 'credit_spent', 'credit_refunded', 'credit_returned', 'credit_expired')) m
                      ORDER BY cabinet, account, currency, seq DESC) l;
            """),
        Step(version: 6, name: "room on the cabinets' pages for their updates", sql: """
            -- Each batch moves the contiguous seq of every cabinet in it: with half of each page
            -- left free the new row version stays on its page (a HOT update), and the primary
            -- key's index is not written again. Pages written from now on keep the room.
            ALTER TABLE cabinets SET (fillfactor = 50);
            """),
    ]
}
