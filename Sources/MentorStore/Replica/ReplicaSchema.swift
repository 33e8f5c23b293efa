/// The replica's schema, as migrations. `PRAGMA user_version` counts the applied ones; a newer
/// build adds migrations at the end and never edits an old one.
enum ReplicaSchema {
    static var migrator: Migrator {
        var m = Migrator()
        m.register(1, "records, authors, hold-back, evidence, cards, private views", """
            CREATE TABLE authors (
                id          INTEGER PRIMARY KEY,
                key         BLOB NOT NULL UNIQUE CHECK (length(key) = 32),
                contiguous  INTEGER NOT NULL DEFAULT 0,   -- every seq 1...contiguous is held
                forked      INTEGER NOT NULL DEFAULT 0    -- 1 once two records shared a seq
            );
            -- Every applied record, exactly as signed.
            CREATE TABLE records (
                author      INTEGER NOT NULL REFERENCES authors(id),
                seq         INTEGER NOT NULL,
                id          BLOB NOT NULL,                -- BLAKE2b-256 of bytes
                type        INTEGER NOT NULL,
                timestamp   INTEGER NOT NULL,
                bytes       BLOB NOT NULL,
                PRIMARY KEY (author, seq, id)
            ) WITHOUT ROWID;
            -- Verified records that arrived before an earlier seq of their author.
            CREATE TABLE pending (
                author      INTEGER NOT NULL REFERENCES authors(id),
                seq         INTEGER NOT NULL,
                id          BLOB NOT NULL,
                bytes       BLOB NOT NULL,
                PRIMARY KEY (author, seq, id)
            ) WITHOUT ROWID;
            -- Equivocation evidence: each record that shared an (author, seq) with another.
            CREATE TABLE evidence (
                author      INTEGER NOT NULL REFERENCES authors(id),
                seq         INTEGER NOT NULL,
                id          BLOB NOT NULL,
                bytes       BLOB NOT NULL,
                PRIMARY KEY (author, seq, id)
            ) WITHOUT ROWID;
            -- Card fields: the maximal entries of each (author, field) multi-value register.
            CREATE TABLE card_entries (
                author      INTEGER NOT NULL REFERENCES authors(id),
                field       INTEGER NOT NULL,
                record_id   BLOB NOT NULL,
                clock       BLOB NOT NULL,                -- effective clock, canonical encoding
                timestamp   INTEGER NOT NULL,
                value       BLOB NOT NULL,
                PRIMARY KEY (author, field, record_id)
            ) WITHOUT ROWID;
            -- Accounts hosted on this node: their sealed records are opened and materialized.
            CREATE TABLE local_accounts (
                key         BLOB PRIMARY KEY CHECK (length(key) = 32),
                scanned     INTEGER NOT NULL DEFAULT 0    -- 1 once every held sealed record was opened for it
            ) WITHOUT ROWID;
            -- Sealed records that arrived while a local account was locked: opened at its next unlock.
            CREATE TABLE unopened (
                account     BLOB NOT NULL REFERENCES local_accounts(key),
                author      INTEGER NOT NULL,
                seq         INTEGER NOT NULL,
                id          BLOB NOT NULL,
                PRIMARY KEY (account, author, seq, id)
            ) WITHOUT ROWID;
            -- Decrypted private entries (likes, chats, unmatches) of a local account's pairs.
            CREATE TABLE pair_entries (
                account     BLOB NOT NULL REFERENCES local_accounts(key),
                other       BLOB NOT NULL,
                record_id   BLOB NOT NULL,
                author      BLOB NOT NULL,
                seq         INTEGER NOT NULL,
                timestamp   INTEGER NOT NULL,
                kind        INTEGER NOT NULL,             -- 1 like, 2 chat, 3 unmatch
                liked       INTEGER,
                peer_seq    INTEGER,
                text        TEXT,
                PRIMARY KEY (account, other, record_id)
            ) WITHOUT ROWID;
            -- The materialized relation of a local account with another (derived from pair_entries).
            CREATE TABLE pairs (
                account      BLOB NOT NULL REFERENCES local_accounts(key),
                other        BLOB NOT NULL,
                i_like       INTEGER NOT NULL,
                they_like    INTEGER NOT NULL,
                matched      INTEGER NOT NULL,
                unmatched_by BLOB,
                messages     INTEGER NOT NULL,
                PRIMARY KEY (account, other)
            ) WITHOUT ROWID;
            """)
        m.register(2, "node-local accounts, passes and blobs", """
            -- The accounts of this node's Unix users (never replicated).
            CREATE TABLE node_accounts (
                uid         INTEGER PRIMARY KEY,
                account     BLOB NOT NULL UNIQUE CHECK (length(account) = 32),
                email       TEXT NOT NULL,
                protected   INTEGER NOT NULL,
                created     INTEGER NOT NULL
            );
            -- Passes ("swipe left") stay on the account's own node.
            CREATE TABLE passes (
                account     BLOB NOT NULL,
                target      BLOB NOT NULL,
                at          INTEGER NOT NULL,
                PRIMARY KEY (account, target)
            ) WITHOUT ROWID;
            -- Content-addressed blobs (photos): BLAKE2b-256 of the data.
            CREATE TABLE blobs (
                hash        BLOB PRIMARY KEY CHECK (length(hash) = 32),
                format      INTEGER NOT NULL,
                size        INTEGER NOT NULL,
                data        BLOB NOT NULL
            ) WITHOUT ROWID;
            """)
        // The per-author digest: the XOR of the first 8 bytes (big-endian, as a signed 64-bit
        // integer) of the IDs of all the author's stored records, variants included. Two
        // replicas whose contiguous seqs agree but whose digests differ hold different variants
        // (a fork one of them never saw); sync then exchanges the whole log. NULL until
        // `Replica` computes it on open (SQL cannot read a blob as an integer).
        m.register(3, "per-author digest of record IDs", """
            ALTER TABLE authors ADD COLUMN digest INTEGER;
            """)
        // Chat messages name the like they answer and likes carry a peer seq (PROTOCOL.md
        // section 8.5). The decrypted entries are derived data: they are dropped and every
        // sealed record is opened again, with the new payload rules, at each account's next
        // unlock (unprotected accounts: when the daemon starts), so the pair views are those
        // the records give and no entry decoded by an older build survives.
        m.register(4, "chats name the like they answer: private views rebuilt from the records", """
            ALTER TABLE pair_entries ADD COLUMN answers BLOB;   -- chat: record ID of the answered like
            DELETE FROM pair_entries;
            DELETE FROM pairs;
            DELETE FROM unopened;
            UPDATE local_accounts SET scanned = 0;
            """)
        // Records dated ahead of this node's clock (past the tolerance, within the hold bound):
        // verified, kept aside by author key (no `authors` row is made for them), and applied
        // once due (PROTOCOL.md §9). Not part of the digest or of the hello's vector.
        m.register(5, "records held until due", """
            CREATE TABLE held_until_due (
                author      BLOB NOT NULL CHECK (length(author) = 32),
                seq         INTEGER NOT NULL,
                id          BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                bytes       BLOB NOT NULL,
                PRIMARY KEY (author, seq, id)
            ) WITHOUT ROWID;
            CREATE INDEX held_until_due_by_time ON held_until_due(timestamp);
            """)
        // Blobs no current card names are deleted (`collectBlobs`); one a local user uploaded is
        // kept for a while first, so that the card edit naming it can follow. NULL: fetched.
        m.register(6, "when a local user uploaded a blob", """
            ALTER TABLE blobs ADD COLUMN uploaded INTEGER;
            """)
        // Whether a card names a photo, by the photo's hash (the first 32 bytes of a 37-byte
        // photo value, field 8): photo clean-up after each batch of card edits asks this once per
        // blob held, instead of scanning every author's card fields.
        m.register(7, "card photos by hash", """
            CREATE INDEX card_entries_photo ON card_entries(substr(value, 1, 32)) WHERE field = 8 AND length(value) = 37;
            """)
        // Sync v2's reconciliation tree (PROTOCOL.md §13.3; `ReconIndex` says why this shape).
        // The set is the IDs of `records` and `pending`, through an index on each (an ID's entry
        // holds its record's author and seq too, so a record is found by ID); `recon_nodes` is
        // every non-empty node by `depth << 16 | prefix`. `Replica` fills `recon_nodes` from the
        // rows on the first open after this migration (the hashes are BLAKE2b, not SQL), and
        // every batch keeps it from then on, in its own transaction.
        // Size at 1,000,000 records (`mentormate-bench recon`): the ID indexes ~47 bytes a record
        // (the 32-byte ID, author and seq, the cell's header, pages ~3/4 full after random
        // inserts), `recon_nodes` ~3 MB (65,536 leaves and 4,369 internal nodes of ~45 bytes,
        // whatever the count: 3 bytes a record at 1M, 26 at 100k); ~50 bytes a record in all.
        m.register(8, "reconciliation tree of the held record IDs", """
            CREATE INDEX records_by_id ON records(id);
            CREATE INDEX pending_by_id ON pending(id);
            CREATE TABLE recon_nodes (
                node        INTEGER PRIMARY KEY,          -- depth << 16 | prefix
                count       INTEGER NOT NULL,             -- IDs under the node (>= 1)
                hash        BLOB NOT NULL                 -- ReconHash.leaf / ReconHash.node
            );
            """)
        // Compaction and applying out of order (PROTOCOL.md §9; `ApplyBatch` says how): a card
        // record every register of which has a newer winner is superseded and dropped — a
        // replica keeps live state, not history. `superseded` remembers, in ~20 bytes, the
        // (author, seq) and the first 8 bytes of the ID of each record dropped or refused so:
        // enough to know a record offered again (`duplicate`), to see a second record at the
        // same seq (a fork), and to keep `contiguous` (1...contiguous applied, stored or
        // dropped). At most 2 per (author, seq), like variants. The seq 1 card (its proof of
        // work admits the account) is never dropped. `pending` now holds only records of
        // authors whose seq 1 is not held yet, each for at most `Settings.maxPendingAge` after
        // `arrived` (ms; 0 from before this migration: set to the time of the next open).
        // This migration compacts a replica in place: the dropped records' IDs leave the
        // reconciliation tree, rebuilt on the next open (`ReconIndex.buildIfMissing`), and the
        // v1 digests are recomputed (`Replica.computeMissingDigests`). The file does not shrink;
        // SQLite reuses the freed pages.
        m.register(9, "compaction: superseded card records dropped, records apply out of order", """
            CREATE TABLE superseded (
                author      INTEGER NOT NULL REFERENCES authors(id),
                seq         INTEGER NOT NULL,
                id_prefix   BLOB NOT NULL,                -- the record ID's first 8 bytes
                PRIMARY KEY (author, seq, id_prefix)
            ) WITHOUT ROWID;
            ALTER TABLE pending ADD COLUMN arrived INTEGER NOT NULL DEFAULT 0;
            CREATE INDEX pending_by_arrival ON pending(arrived);
            INSERT OR IGNORE INTO superseded(author, seq, id_prefix)
                SELECT r.author, r.seq, substr(r.id, 1, 8) FROM records r
                WHERE r.type = 1 AND r.seq > 1
                  AND NOT EXISTS (SELECT 1 FROM card_entries c WHERE c.author = r.author AND c.record_id = r.id);
            DELETE FROM records
                WHERE type = 1 AND seq > 1
                  AND NOT EXISTS (SELECT 1 FROM card_entries c WHERE c.author = records.author AND c.record_id = records.id);
            DELETE FROM recon_nodes;
            UPDATE authors SET digest = NULL;
            """)
        // The node-wide storage budget (issue 13 item 4, `StorageTotals.swift`): the bytes of
        // every stored record (`records` and `pending`), kept by triggers in one row so that the
        // daemon reads its foreign bytes at start in O(1) instead of summing the replica (2 GiB at
        // the default budget); each insert or delete pays one update of that row. `pairs_by_other`
        // answers "is this author a partner of a local account" (stored past the budget).
        m.register(10, "storage totals for the node-wide budget", """
            CREATE TABLE storage_totals (
                id          INTEGER PRIMARY KEY CHECK (id = 1),
                bytes       INTEGER NOT NULL              -- sum of length(bytes) over records and pending
            );
            INSERT INTO storage_totals(id, bytes) VALUES (1,
                (SELECT coalesce(sum(length(bytes)), 0) FROM records) + (SELECT coalesce(sum(length(bytes)), 0) FROM pending));
            CREATE TRIGGER records_bytes_in AFTER INSERT ON records BEGIN
                UPDATE storage_totals SET bytes = bytes + length(NEW.bytes) WHERE id = 1; END;
            CREATE TRIGGER records_bytes_out AFTER DELETE ON records BEGIN
                UPDATE storage_totals SET bytes = bytes - length(OLD.bytes) WHERE id = 1; END;
            CREATE TRIGGER pending_bytes_in AFTER INSERT ON pending BEGIN
                UPDATE storage_totals SET bytes = bytes + length(NEW.bytes) WHERE id = 1; END;
            CREATE TRIGGER pending_bytes_out AFTER DELETE ON pending BEGIN
                UPDATE storage_totals SET bytes = bytes - length(OLD.bytes) WHERE id = 1; END;
            CREATE INDEX pairs_by_other ON pairs(other);
            """)
        // The photos current cards name that this node does not hold (`Replica.missingPhotos`),
        // kept by triggers on `card_entries` and `blobs`, in the order they are fetched (smallest
        // first). Listing them was a scan and sort of every card's photo entry — half a second
        // at 100,000 accounts, on every link that came up — and is now the first rows of this.
        m.register(11, "the photos cards name that are not held, kept by triggers", """
            CREATE TABLE photos_missing (
                size        BLOB NOT NULL,                -- substr(value, 33, 4): the size, big-endian
                value       BLOB NOT NULL,                -- the card's photo field (a PhotoRef, 37 bytes)
                author      INTEGER NOT NULL REFERENCES authors(id),
                PRIMARY KEY (size, value, author)
            ) WITHOUT ROWID;
            CREATE INDEX photos_missing_by_hash ON photos_missing(substr(value, 1, 32));
            INSERT OR IGNORE INTO photos_missing(size, value, author)
                SELECT substr(c.value, 33, 4), c.value, c.author FROM card_entries c
                WHERE c.field = 8 AND length(c.value) = 37 AND substr(c.value, 1, 32) NOT IN (SELECT hash FROM blobs);
            CREATE TRIGGER photos_missing_card_in AFTER INSERT ON card_entries
                WHEN NEW.field = 8 AND length(NEW.value) = 37
                     AND NOT EXISTS (SELECT 1 FROM blobs WHERE hash = substr(NEW.value, 1, 32)) BEGIN
                INSERT OR IGNORE INTO photos_missing(size, value, author)
                    VALUES (substr(NEW.value, 33, 4), NEW.value, NEW.author); END;
            CREATE TRIGGER photos_missing_card_out AFTER DELETE ON card_entries
                WHEN OLD.field = 8 AND length(OLD.value) = 37 BEGIN
                DELETE FROM photos_missing
                    WHERE size = substr(OLD.value, 33, 4) AND value = OLD.value AND author = OLD.author
                      AND NOT EXISTS (SELECT 1 FROM card_entries WHERE author = OLD.author AND field = 8 AND value = OLD.value); END;
            CREATE TRIGGER photos_missing_card_change AFTER UPDATE OF value, field, author ON card_entries
                WHEN OLD.field = 8 OR NEW.field = 8 BEGIN
                DELETE FROM photos_missing
                    WHERE OLD.field = 8 AND length(OLD.value) = 37
                      AND size = substr(OLD.value, 33, 4) AND value = OLD.value AND author = OLD.author
                      AND NOT EXISTS (SELECT 1 FROM card_entries WHERE author = OLD.author AND field = 8 AND value = OLD.value);
                INSERT OR IGNORE INTO photos_missing(size, value, author)
                    SELECT substr(NEW.value, 33, 4), NEW.value, NEW.author
                    WHERE NEW.field = 8 AND length(NEW.value) = 37
                      AND NOT EXISTS (SELECT 1 FROM blobs WHERE hash = substr(NEW.value, 1, 32)); END;
            CREATE TRIGGER photos_missing_blob_in AFTER INSERT ON blobs BEGIN
                DELETE FROM photos_missing WHERE substr(value, 1, 32) = NEW.hash; END;
            CREATE TRIGGER photos_missing_blob_out AFTER DELETE ON blobs BEGIN
                INSERT OR IGNORE INTO photos_missing(size, value, author)
                    SELECT substr(c.value, 33, 4), c.value, c.author FROM card_entries c
                    WHERE c.field = 8 AND length(c.value) = 37 AND substr(c.value, 1, 32) = OLD.hash; END;
            """)
        // Device keys (PROTOCOL.md §6.2): an account's certificates for its device keys, and the
        // revocations that end them. Both are records on the account's own chain (a device may
        // revoke itself); these tables are what the records say, kept with each batch. A
        // device's records are held back until its certificate is stored, refused past its
        // revocation's last seq or dated after its certificate expired.
        m.register(12, "device certificates and revocations", """
            CREATE TABLE device_certs (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                device      BLOB NOT NULL CHECK (length(device) = 32),
                record_id   BLOB NOT NULL,                -- the certificate record
                label       TEXT NOT NULL,
                created     INTEGER NOT NULL,
                expires     INTEGER,                      -- ms; NULL: never
                PRIMARY KEY (account, device, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX device_certs_by_device ON device_certs(device);
            CREATE TABLE device_revocations (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                device      BLOB NOT NULL CHECK (length(device) = 32),
                record_id   BLOB NOT NULL,                -- the revocation record
                last_seq    INTEGER NOT NULL,             -- the device's records above it are refused
                PRIMARY KEY (account, device, record_id)
            ) WITHOUT ROWID;
            -- The accounts' encryption keys their certificates and rotations publish (PROTOCOL.md
            -- §7.5): likes and messages are sealed to an account's newest.
            -- A pair entry's match (a message's own like, an unmatch's two likes) and its
            -- effective clock over its account's keys (PROTOCOL.md §8.4–8.7).
            ALTER TABLE pair_entries ADD COLUMN mine BLOB;
            ALTER TABLE pair_entries ADD COLUMN clock BLOB;
            -- Purge tags (PROTOCOL.md §8.8): each message's, and the tags an unmatch purged —
            -- a message arriving with one is not stored.
            -- (The key's columns first: SQLite 3.40's integrity_check misreads a NOT NULL column
            -- declared before a key column of a WITHOUT ROWID table as NULL.)
            CREATE TABLE chat_purge (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                tag         BLOB NOT NULL CHECK (length(tag) = 32),
                id          BLOB NOT NULL,
                author      INTEGER NOT NULL,
                seq         INTEGER NOT NULL,
                PRIMARY KEY (account, tag, id)
            ) WITHOUT ROWID;
            CREATE TABLE purged (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                tag         BLOB NOT NULL CHECK (length(tag) = 32),
                PRIMARY KEY (account, tag)
            ) WITHOUT ROWID;
            -- The newest note (a pass or its undoing) of a local account about each target,
            -- by (timestamp, record ID) (PROTOCOL.md §7.6); `passes` follows it.
            CREATE TABLE pass_notes (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                target      BLOB NOT NULL CHECK (length(target) = 32),
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                passed      INTEGER NOT NULL,
                PRIMARY KEY (account, target)
            ) WITHOUT ROWID;
            CREATE TABLE account_keys (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                epoch       INTEGER NOT NULL,
                public      BLOB NOT NULL CHECK (length(public) = 32),
                PRIMARY KEY (account, epoch, public)
            ) WITHOUT ROWID;
            """)
        // Per-account settings (`settings show|set`, MentorNode/Settings.swift): node-local, never
        // synced; a key without a row has its default. Values are the registry's canonical text.
        m.register(13, "per-account settings", """
            CREATE TABLE account_settings (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                key         TEXT NOT NULL,
                value       TEXT NOT NULL,
                PRIMARY KEY (account, key)
            ) WITHOUT ROWID;
            """)
        // Blocks (PROTOCOL.md §7.6): a register per (account, target) of the account's block
        // notes, apart from its passes; `blocks` follows the newest.
        m.register(14, "blocks", """
            CREATE TABLE block_notes (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                target      BLOB NOT NULL CHECK (length(target) = 32),
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                blocked     INTEGER NOT NULL,
                PRIMARY KEY (account, target)
            ) WITHOUT ROWID;
            CREATE TABLE blocks (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                target      BLOB NOT NULL CHECK (length(target) = 32),
                at          INTEGER NOT NULL,
                PRIMARY KEY (account, target)
            ) WITHOUT ROWID;
            """)
        // Reserved for the lead's branch of issue 16 (the photos' migration keeps its number, 16).
        m.register(15, "nothing: reserved while issue 16 was built in parallel; its card fields needed no table", "")
        // A card names up to six photos (field 8 is a list of 37-byte PhotoRefs, PROTOCOL.md §6).
        // `card_photos` holds one row per photo of each current card entry (winners and
        // concurrent values), kept by triggers on `card_entries`; whether a card names a blob
        // (fetching, collecting) is one look-up in its hash index, and `photos_missing` is now
        // kept from it, so every photo of a card is fetched, not only the first. It replaces
        // the index on the first 32 bytes of a 37-byte value (migration 7), which saw one photo.
        // An upload a card has named is no longer spared as fresh (migration 6): its card edit
        // came, so the photo goes as soon as no card names it (`profile photo remove`).
        // Positions come from a six-row constant (no table function: any SQLite 3.3x has it).
        m.register(16, "every photo of a card, one row each", """
            CREATE TABLE card_photos (
                author      INTEGER NOT NULL REFERENCES authors(id),
                record_id   BLOB NOT NULL,                -- the card entry (card_entries, field 8)
                slot        INTEGER NOT NULL,             -- its position in the list; 0: the main photo
                ref         BLOB NOT NULL,                -- a PhotoRef, 37 bytes: hash, size, format
                PRIMARY KEY (author, record_id, slot)
            ) WITHOUT ROWID;
            CREATE INDEX card_photos_by_hash ON card_photos(substr(ref, 1, 32));
            INSERT OR IGNORE INTO card_photos(author, record_id, slot, ref)
                SELECT c.author, c.record_id, s.n, substr(c.value, s.n * 37 + 1, 37) FROM card_entries c, \(photoSlots) s
                WHERE c.field = 8 AND s.n * 37 < length(c.value);
            CREATE TRIGGER card_photos_entry_in AFTER INSERT ON card_entries WHEN NEW.field = 8 BEGIN
                INSERT OR IGNORE INTO card_photos(author, record_id, slot, ref)
                    SELECT NEW.author, NEW.record_id, s.n, substr(NEW.value, s.n * 37 + 1, 37) FROM \(photoSlots) s
                    WHERE s.n * 37 < length(NEW.value); END;
            CREATE TRIGGER card_photos_entry_out AFTER DELETE ON card_entries WHEN OLD.field = 8 BEGIN
                DELETE FROM card_photos WHERE author = OLD.author AND record_id = OLD.record_id; END;
            CREATE TRIGGER card_photos_entry_change AFTER UPDATE OF author, field, record_id, value ON card_entries
                WHEN OLD.field = 8 OR NEW.field = 8 BEGIN
                DELETE FROM card_photos WHERE OLD.field = 8 AND author = OLD.author AND record_id = OLD.record_id;
                INSERT OR IGNORE INTO card_photos(author, record_id, slot, ref)
                    SELECT NEW.author, NEW.record_id, s.n, substr(NEW.value, s.n * 37 + 1, 37) FROM \(photoSlots) s
                    WHERE NEW.field = 8 AND s.n * 37 < length(NEW.value); END;
            DROP TRIGGER photos_missing_card_in;
            DROP TRIGGER photos_missing_card_out;
            DROP TRIGGER photos_missing_card_change;
            DROP TRIGGER photos_missing_blob_out;
            DROP INDEX card_entries_photo;
            CREATE TRIGGER photos_missing_photo_in AFTER INSERT ON card_photos
                WHEN NOT EXISTS (SELECT 1 FROM blobs WHERE hash = substr(NEW.ref, 1, 32)) BEGIN
                INSERT OR IGNORE INTO photos_missing(size, value, author) VALUES (substr(NEW.ref, 33, 4), NEW.ref, NEW.author); END;
            CREATE TRIGGER photos_missing_photo_out AFTER DELETE ON card_photos BEGIN
                DELETE FROM photos_missing
                    WHERE size = substr(OLD.ref, 33, 4) AND value = OLD.ref AND author = OLD.author
                      AND NOT EXISTS (SELECT 1 FROM card_photos WHERE author = OLD.author AND ref = OLD.ref); END;
            CREATE TRIGGER photos_missing_blob_out AFTER DELETE ON blobs BEGIN
                INSERT OR IGNORE INTO photos_missing(size, value, author)
                    SELECT substr(p.ref, 33, 4), p.ref, p.author FROM card_photos p WHERE substr(p.ref, 1, 32) = OLD.hash; END;
            CREATE TRIGGER card_photos_named_upload AFTER INSERT ON card_photos BEGIN
                UPDATE blobs SET uploaded = NULL WHERE hash = substr(NEW.ref, 1, 32) AND uploaded IS NOT NULL; END;
            DELETE FROM photos_missing;
            INSERT OR IGNORE INTO photos_missing(size, value, author)
                SELECT substr(p.ref, 33, 4), p.ref, p.author FROM card_photos p
                WHERE NOT EXISTS (SELECT 1 FROM blobs WHERE hash = substr(p.ref, 1, 32));
            """)
        m.register(17, "posts, comments, likes of posts, their search index", """
            CREATE TABLE posts (
                id          BLOB PRIMARY KEY,             -- the creating record's ID
                account     BLOB NOT NULL,                -- its author's account
                created     INTEGER NOT NULL,             -- the creating record's timestamp
                photos      INTEGER NOT NULL,             -- how many (their refs: card_photos rows, record_id = id)
                caption     TEXT NOT NULL,
                caption_at  INTEGER NOT NULL,             -- the caption register's winner: (timestamp, record ID)
                caption_id  BLOB NOT NULL,
                tags        TEXT NOT NULL,                -- canonical tags, one space between
                tags_at     INTEGER NOT NULL,
                tags_id     BLOB NOT NULL
            );
            CREATE INDEX posts_by_created ON posts(created, id);
            CREATE INDEX posts_by_account ON posts(account, created);
            CREATE VIRTUAL TABLE post_search USING fts5(caption, tags, content='posts', content_rowid='rowid');
            CREATE TRIGGER post_search_in AFTER INSERT ON posts BEGIN
                INSERT INTO post_search(rowid, caption, tags) VALUES (NEW.rowid, NEW.caption, NEW.tags); END;
            CREATE TRIGGER post_search_out AFTER DELETE ON posts BEGIN
                INSERT INTO post_search(post_search, rowid, caption, tags) VALUES ('delete', OLD.rowid, OLD.caption, OLD.tags); END;
            CREATE TRIGGER post_search_change AFTER UPDATE OF caption, tags ON posts BEGIN
                INSERT INTO post_search(post_search, rowid, caption, tags) VALUES ('delete', OLD.rowid, OLD.caption, OLD.tags);
                INSERT INTO post_search(rowid, caption, tags) VALUES (NEW.rowid, NEW.caption, NEW.tags); END;
            CREATE TABLE post_tags (
                tag         TEXT NOT NULL,
                post        BLOB NOT NULL,
                PRIMARY KEY (tag, post)
            ) WITHOUT ROWID;
            CREATE TABLE posts_gone (
                id          BLOB PRIMARY KEY,             -- a deleted post: nothing naming it is stored again
                account     BLOB NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE post_refs (
                post        BLOB NOT NULL,                -- every stored record naming a post
                id          BLOB NOT NULL,
                PRIMARY KEY (post, id)
            ) WITHOUT ROWID;
            CREATE TABLE post_ops (
                id          BLOB PRIMARY KEY,             -- an edit (1), deletion (2), hiding (3), comment deletion (4)
                post        BLOB NOT NULL,
                account     BLOB NOT NULL,
                kind        INTEGER NOT NULL,
                target      BLOB                          -- the comment of kinds 3 and 4
            ) WITHOUT ROWID;
            CREATE INDEX post_ops_by_post ON post_ops(post, kind);
            CREATE INDEX post_ops_by_target ON post_ops(target) WHERE target IS NOT NULL;
            CREATE TABLE comments (
                id          BLOB PRIMARY KEY,
                post        BLOB NOT NULL,
                account     BLOB NOT NULL,
                created     INTEGER NOT NULL,
                text        TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX comments_by_post ON comments(post, created);
            CREATE TABLE comments_gone (
                id          BLOB PRIMARY KEY,
                account     BLOB NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE post_likes (
                post        BLOB NOT NULL,
                account     BLOB NOT NULL,
                record_id   BLOB NOT NULL,                -- the register's winner: newest (timestamp, record ID)
                timestamp   INTEGER NOT NULL,
                liked       INTEGER NOT NULL,
                PRIMARY KEY (post, account)
            ) WITHOUT ROWID;
            CREATE TABLE hidden_posts (
                account     BLOB NOT NULL,                -- a local account's notes hiding a post (§7.6, field 4)
                post        BLOB NOT NULL,
                record_id   BLOB NOT NULL,                -- the newest note: (timestamp, record ID)
                timestamp   INTEGER NOT NULL,
                hidden      INTEGER NOT NULL,
                PRIMARY KEY (account, post)
            ) WITHOUT ROWID;
            """)
        // Follows (record type 12, PROTOCOL.md §6.5): every follow record's entry; the newest of
        // an account about a target (timestamp, then record ID) says whether it follows.
        m.register(18, "follow entries", """
            CREATE TABLE follow_entries (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                target      BLOB NOT NULL CHECK (length(target) = 32),
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                following   INTEGER NOT NULL,
                PRIMARY KEY (account, target, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX follow_entries_by_target ON follow_entries(target, account);
            CREATE INDEX follow_entries_by_record ON follow_entries(record_id);
            """)
        // Quiz results (record type 13, PROTOCOL.md §15.4): every result's entry with the score
        // this node computed from its answers; per (account, day) the earliest counts.
        m.register(19, "quiz results", """
            CREATE TABLE quiz_results (
                account     BLOB NOT NULL CHECK (length(account) = 32),
                day         TEXT NOT NULL,                -- YYYY-MM-DD, the UTC date of the timestamp
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                score       INTEGER NOT NULL,             -- computed here from the answers, never read from a record
                PRIMARY KEY (account, day, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX quiz_results_by_day ON quiz_results(day, account);
            CREATE INDEX quiz_results_by_record ON quiz_results(record_id);
            """)
        // Posts get their place in time as their rowid (`recency`, an alias of the rowid, which
        // VACUUM keeps): the creating record's timestamp shifted left 16 bits, plus a slot among
        // the posts of that millisecond. FTS5 walks a term's rowids newest first and stops, so
        // `posts --search` ranks the newest 1,000 matches without reading the others
        // (`PostSearch.swift`). The table is rebuilt in that order and the index with it. And
        // `card_photos` gets an index by record ID, which a post's photos are read by.
        m.register(20, "posts keyed by recency, their search index rebuilt", """
            CREATE TABLE posts_by_recency (
                recency     INTEGER PRIMARY KEY,          -- created << 16 | slot (PostSearch.recency)
                id          BLOB NOT NULL UNIQUE,         -- the creating record's ID
                account     BLOB NOT NULL,
                created     INTEGER NOT NULL,
                photos      INTEGER NOT NULL,
                caption     TEXT NOT NULL,
                caption_at  INTEGER NOT NULL,
                caption_id  BLOB NOT NULL,
                tags        TEXT NOT NULL,
                tags_at     INTEGER NOT NULL,
                tags_id     BLOB NOT NULL
            );
            INSERT INTO posts_by_recency(recency, id, account, created, photos, caption, caption_at, caption_id, tags, tags_at, tags_id)
                SELECT CASE WHEN slot < 65536 THEN (ms << 16) + slot ELSE -1 - row_number() OVER (ORDER BY created, id) END,
                       id, account, created, photos, caption, caption_at, caption_id, tags, tags_at, tags_id
                FROM (SELECT *, min(max(created, 0), 70368744177664) AS ms,
                             row_number() OVER (PARTITION BY min(max(created, 0), 70368744177664) ORDER BY id) - 1 AS slot
                      FROM posts);
            DROP TABLE posts;
            ALTER TABLE posts_by_recency RENAME TO posts;
            CREATE INDEX posts_by_created ON posts(created, id);
            CREATE INDEX posts_by_account ON posts(account, created);
            CREATE TRIGGER post_search_in AFTER INSERT ON posts BEGIN
                INSERT INTO post_search(rowid, caption, tags) VALUES (NEW.rowid, NEW.caption, NEW.tags); END;
            CREATE TRIGGER post_search_out AFTER DELETE ON posts BEGIN
                INSERT INTO post_search(post_search, rowid, caption, tags) VALUES ('delete', OLD.rowid, OLD.caption, OLD.tags); END;
            CREATE TRIGGER post_search_change AFTER UPDATE OF caption, tags ON posts BEGIN
                INSERT INTO post_search(post_search, rowid, caption, tags) VALUES ('delete', OLD.rowid, OLD.caption, OLD.tags);
                INSERT INTO post_search(rowid, caption, tags) VALUES (NEW.rowid, NEW.caption, NEW.tags); END;
            INSERT INTO post_search(post_search) VALUES ('rebuild');
            -- A post's photos by its ID (every listed post reads them; a deletion removes them):
            -- without this each was a scan of every card's and post's photo rows.
            CREATE INDEX card_photos_by_record ON card_photos(record_id, slot);
            -- A post's tags by the post: a post's creation, edit and removal replace them, and
            -- without this each was a scan of every post's tags (catch-up grew with the square
            -- of the posts held: 100,000 posts took 18 minutes to apply).
            CREATE INDEX post_tags_by_post ON post_tags(post);
            """)
        // Meetups (record types 14-16, PROTOCOL.md §6.7): each meetup's current state (its
        // create record with the host's edits folded in, and the seats its roster fills), kept
        // so that listing the open ones is one indexed query; every edit, join and roster entry.
        m.register(21, "meetups", """
            CREATE TABLE meetups (
                id          BLOB PRIMARY KEY,             -- the create record's ID
                host        BLOB NOT NULL,                -- the host's account
                created     INTEGER NOT NULL,
                create_body BLOB NOT NULL,
                title       TEXT NOT NULL,
                topic_kind  INTEGER NOT NULL,             -- 1 game, 2 course
                topic       TEXT NOT NULL,
                start       INTEGER NOT NULL,             -- ms, UTC
                ends        INTEGER NOT NULL,             -- start + duration
                place       TEXT NOT NULL,
                seats       INTEGER NOT NULL,
                min_age     INTEGER NOT NULL,             -- 0: no limit
                max_age     INTEGER NOT NULL,
                about       TEXT NOT NULL,
                cancelled   INTEGER NOT NULL DEFAULT 0,
                taken       INTEGER NOT NULL DEFAULT 0    -- seats held (roster joins that stand, at most seats)
            ) WITHOUT ROWID;
            CREATE INDEX meetups_by_start ON meetups(start);
            CREATE INDEX meetups_by_ends ON meetups(ends);
            CREATE TABLE meetup_edits (
                meetup      BLOB NOT NULL,
                account     BLOB NOT NULL,
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                body        BLOB NOT NULL,
                PRIMARY KEY (meetup, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX meetup_edits_by_record ON meetup_edits(record_id);
            CREATE TABLE meetup_joins (
                meetup      BLOB NOT NULL,
                account     BLOB NOT NULL,
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                joining     INTEGER NOT NULL,
                arrived     INTEGER NOT NULL,             -- this node's clock when it applied the join: the host's node seats in this order
                PRIMARY KEY (meetup, account, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX meetup_joins_by_record ON meetup_joins(record_id);
            CREATE INDEX meetup_joins_by_account ON meetup_joins(account);
            CREATE TABLE meetup_rosters (
                meetup      BLOB NOT NULL,
                account     BLOB NOT NULL,
                record_id   BLOB NOT NULL,
                timestamp   INTEGER NOT NULL,
                joins       BLOB NOT NULL,                -- join record IDs, 32 bytes each, in seat order
                PRIMARY KEY (meetup, record_id)
            ) WITHOUT ROWID;
            CREATE INDEX meetup_rosters_by_record ON meetup_rosters(record_id);
            CREATE TABLE meetups_gone (
                id          BLOB PRIMARY KEY,             -- a meetup collected a week after it ended: its records are not stored again
                ends        INTEGER NOT NULL
            ) WITHOUT ROWID;
            """)
        // The words the post search index holds (FTS5's vocabulary, read in place: no storage
        // of its own), so that a search's last word, which may be half typed, is looked up as
        // the few whole words it starts (PostSearch.swift).
        m.register(22, "the post search index's words", """
            CREATE VIRTUAL TABLE post_words USING fts5vocab(post_search, row);
            """)
        // What this node told its accounts of the meetups they joined (`event.meetup`: seat,
        // reminder, cancelled), so that a restart or a later unlock does not tell it again.
        // Node-local, never synced; a meetup's rows go when it is collected.
        m.register(23, "meetup events told", """
            CREATE TABLE meetup_told (
                account     BLOB NOT NULL,
                meetup      BLOB NOT NULL,
                what        TEXT NOT NULL,                -- seat, reminder or cancelled
                PRIMARY KEY (account, meetup, what)
            ) WITHOUT ROWID;
            CREATE INDEX meetup_told_by_meetup ON meetup_told(meetup);
            """)
        // Campus membership (issue 19 item 5, PROTOCOL.md §6.8): the certificates cards carry,
        // one row per (account, CA) — the latest-expiring — and at most 4 CAs per account (an
        // account can only carry certificates for itself, so only its owner fills its rows).
        // Written when a card holding one is stored or held back, so that a certificate in a
        // card still waiting for its account's first record already counts. Node-local: the
        // node's `campus_ca_key` decides which rows mean "member". Nothing to fill: field 18
        // came with sync v5, so no replica of an older build holds one.
        m.register(24, "campus memberships", """
            CREATE TABLE memberships (
                account     BLOB NOT NULL,
                ca          BLOB NOT NULL,
                domain      TEXT NOT NULL,
                issued      INTEGER NOT NULL,             -- ms
                expires     INTEGER NOT NULL,             -- ms
                PRIMARY KEY (account, ca)
            ) WITHOUT ROWID;
            CREATE INDEX memberships_by_ca ON memberships(ca);
            """)
        return m
    }

    /// The positions 0...5 of a card's photo list, as a subquery (migration 16).
    private static let photoSlots = "(SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5)"
}
