import Foundation
import MentorCore
import MentorCrypto
@testable import MentorStore

/// Fixed "now" for replicas under test: records are stamped before it.
let testNow: UInt64 = 1_800_000_000_000

func testSettings() -> Replica.Settings {
    var s = Replica.Settings()
    s.now = { testNow }
    return s
}

/// `testSettings()` keeping every record (no compaction): for tests of sync and of the
/// reconciliation tree whose fixtures are chains of edits of one field, which compaction would
/// reduce to their last record (CompactionTests test that).
func historySettings() -> Replica.Settings {
    var s = testSettings()
    s.compaction = false
    return s
}

func memoryReplica(unlocking accounts: [SigningKeyPair] = [], settings: Replica.Settings = testSettings()) throws -> Replica {
    let r = try Replica(path: ":memory:", settings: settings)
    for a in accounts { try r.unlock(a) }
    return r
}

/// SQL that takes a replica back from migration 24 (campus memberships).
let undoMigration24 = """
    DROP TABLE memberships;
    """

/// SQL that takes a replica back from migration 23 (meetup events told), and the later ones.
let undoMigration23 = undoMigration24 + """
    DROP TABLE meetup_told;
    """

/// SQL that takes a replica back from migration 22 (the search index's words), and the later ones.
let undoMigration22 = undoMigration23 + """
    DROP TABLE post_words;
    """

/// SQL that takes a replica back from migration 21 (meetups), and the later ones.
let undoMigration21 = undoMigration22 + """
    DROP TABLE meetups; DROP TABLE meetup_edits; DROP TABLE meetup_joins; DROP TABLE meetup_rosters; DROP TABLE meetups_gone;
    """

/// SQL that takes a replica back from migration 19 (quiz results), and the later ones.
let undoMigration19 = undoMigration21 + """
    DROP TABLE quiz_results;
    """

/// SQL that takes a replica back from migration 18 (follow entries), and the later ones.
let undoMigration18 = undoMigration19 + """
    DROP TABLE follow_entries;
    """

/// SQL that takes a replica back from migration 17 (posts, comments, likes of posts).
let undoMigration17 = """
    DROP TRIGGER post_search_in; DROP TRIGGER post_search_out; DROP TRIGGER post_search_change;
    DROP TABLE post_search; DROP TABLE posts; DROP TABLE post_tags; DROP TABLE posts_gone; DROP TABLE post_refs;
    DROP TABLE post_ops; DROP TABLE comments; DROP TABLE comments_gone; DROP TABLE post_likes; DROP TABLE hidden_posts;

    """

/// SQL that takes a replica back from migration 16 (every photo of a card) and the reserved
/// 14–15: the index of migration 7 and the triggers of migration 11 come back.
let undoMigration16 = undoMigration18 + undoMigration17 + """
    DROP TRIGGER card_photos_entry_in; DROP TRIGGER card_photos_entry_out; DROP TRIGGER card_photos_entry_change;
    DROP TRIGGER photos_missing_photo_in; DROP TRIGGER photos_missing_photo_out; DROP TRIGGER photos_missing_blob_out;
    DROP TRIGGER card_photos_named_upload;
    DROP TABLE card_photos;
    CREATE INDEX card_entries_photo ON card_entries(substr(value, 1, 32)) WHERE field = 8 AND length(value) = 37;
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
    CREATE TRIGGER photos_missing_blob_out AFTER DELETE ON blobs BEGIN
        INSERT OR IGNORE INTO photos_missing(size, value, author)
            SELECT substr(c.value, 33, 4), c.value, c.author FROM card_entries c
            WHERE c.field = 8 AND length(c.value) = 37 AND substr(c.value, 1, 32) = OLD.hash; END;
    """


/// SQL that takes a replica back from migration 14 (blocks).
let undoMigration14 = """
    DROP TABLE block_notes; DROP TABLE blocks;
    """

/// SQL that takes a replica back from migration 13 (per-account settings) and the later ones.
let undoMigration13 = undoMigration16 + undoMigration14 + """
    DROP TABLE account_settings;
    """

/// SQL that takes a replica back from migration 12 (device certificates and revocations) and the
/// later ones.
let undoMigration12 = undoMigration13 + """
    DROP TABLE device_certs; DROP TABLE device_revocations; DROP TABLE account_keys; DROP TABLE chat_purge; DROP TABLE purged; DROP TABLE pass_notes;
    ALTER TABLE pair_entries DROP COLUMN mine; ALTER TABLE pair_entries DROP COLUMN clock;
    """

/// SQL that takes a replica back from migration 11 and the later ones (for tests of older
/// schemas' upgrades).
let undoMigration11 = undoMigration12 + """
    DROP TRIGGER photos_missing_card_in; DROP TRIGGER photos_missing_card_out; DROP TRIGGER photos_missing_card_change;
    DROP TRIGGER photos_missing_blob_in; DROP TRIGGER photos_missing_blob_out; DROP TABLE photos_missing;
    """

/// SQL that takes a replica back from migration 10 and the later ones.
let undoMigration10 = undoMigration11 + """
    DROP TRIGGER records_bytes_in; DROP TRIGGER records_bytes_out; DROP TRIGGER pending_bytes_in; DROP TRIGGER pending_bytes_out;
    DROP TABLE storage_totals; DROP INDEX pairs_by_other;
    """

/// A deterministic key pair from a small number.
func keyPair(_ n: UInt8) -> SigningKeyPair {
    // A seed of 32 equal bytes is a valid Ed25519 seed.
    (try? SigningKeyPair(seed: [UInt8](repeating: n, count: 32))) ?? SigningKeyPair.generate()
}

/// A temporary directory removed when the value goes away.
final class TempDir {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "mentormate-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

extension Replica {
    func applyOne(_ v: VerifiedRecord) throws -> ApplyOutcome { try apply(v.encoded) }
}

extension Replica {
    /// The records a reconciliation step has this replica send: its IDs, then every page of
    /// each subtree it names (what the daemon's `fetchIDs`/`fetchSubtree` read).
    func records(sentBy step: ReconStep) throws -> [[UInt8]] {
        var send = try reconRecords(ids: step.sendIDs)
        for node in step.sendSubtrees {
            var cursor: ReconCursor?
            repeat {
                let page = try reconRecords(depth: node.depth, prefix: node.prefix, after: cursor, limit: 100)
                send += page.records
                cursor = page.next
            } while cursor != nil
        }
        return send
    }
}
