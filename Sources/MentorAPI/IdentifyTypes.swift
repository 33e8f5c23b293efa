/// `identify` (docs/API.md): traits in, the closest catalogue entries out.

/// The observed traits; each is optional but at least one is needed. The words are checked by the
/// daemon against the catalogue's sets (a wrong one is -32602 naming the accepted values).
public struct IdentifyRequest: APIRequest, Equatable {
    public enum CodingKeys: String, CodingKey, CaseIterable { case color, luster, cleavage, hardness, streak, limit, post }
    /// light, dark or a colour name.
    public var color: String?
    /// metallic, non-metallic or one luster (vitreous, pearly, …).
    public var luster: String?
    /// none, poor, good or perfect.
    public var cleavage: String?
    /// Mohs hardness, 1 to 10.
    public var hardness: Double?
    /// The streak's colour name.
    public var streak: String?
    /// How many entries (1–20, default 5).
    public var limit: Int64?
    /// A post's ID (a unique prefix of 4+ hex digits): its tags give the traits not given above.
    public var post: String?
    public init(color: String? = nil, luster: String? = nil, cleavage: String? = nil, hardness: Double? = nil,
                streak: String? = nil, limit: Int64? = nil, post: String? = nil) {
        (self.color, self.luster, self.cleavage, self.hardness, self.streak, self.limit) = (color, luster, cleavage, hardness, streak, limit)
        self.post = post
    }
}

/// The closest entries, best first (ties by name).
public struct IdentifyResult: APIObject, Equatable {
    /// A recent post tagged with a match's name (newest first, at most three per match).
    public struct TaggedPost: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey { case id, author, name, caption, created }
        public var id: String
        public var author: String
        public var name: String?
        public var caption: String
        public var created: Int64
        public init(id: String, author: String, name: String?, caption: String, created: Int64) {
            (self.id, self.author, self.name, self.caption, self.created) = (id, author, name, caption, created)
        }
    }
    public struct Match: APIObject, Equatable {
        public enum CodingKeys: String, CodingKey {
            case name, kind, score, reasons, colors, luster, streak, hardness, cleavage, specificGravity = "specific_gravity", crystalSystem = "crystal_system", note, posts
        }
        public var name: String
        /// mineral or rock.
        public var kind: String
        /// 0–100.
        public var score: Int64
        /// One line per trait given, in the order hardness, luster, streak, cleavage, color.
        public var reasons: [String]
        public var colors: [String]
        public var luster: [String]
        public var streak: String
        /// "min–max" (or one number).
        public var hardness: String
        public var cleavage: String
        public var specificGravity: String
        public var crystalSystem: String
        public var note: String
        /// Recent posts tagged with the entry's name (its tag spelling: `native-copper`).
        public var posts: [TaggedPost]
        public init(name: String, kind: String, score: Int64, reasons: [String], colors: [String], luster: [String],
                    streak: String, hardness: String, cleavage: String, specificGravity: String, crystalSystem: String, note: String,
                    posts: [TaggedPost] = []) {
            self.posts = posts
            (self.name, self.kind, self.score, self.reasons, self.colors, self.luster) = (name, kind, score, reasons, colors, luster)
            (self.streak, self.hardness, self.cleavage, self.specificGravity, self.crystalSystem, self.note) =
                (streak, hardness, cleavage, specificGravity, crystalSystem, note)
        }
    }
    public enum CodingKeys: String, CodingKey { case matches, post, tagsRead = "tags_read", tagsIgnored = "tags_ignored" }
    public var matches: [Match]
    /// With `post`: the post's short ID, the tags read ("TAG: TRAIT VALUE") and the tags of the
    /// vocabulary not used ("TAG: WHY").
    public var post: String?
    public var tagsRead: [String]?
    public var tagsIgnored: [String]?
    public init(matches: [Match], post: String? = nil, tagsRead: [String]? = nil, tagsIgnored: [String]? = nil) {
        self.matches = matches
        (self.post, self.tagsRead, self.tagsIgnored) = (post, tagsRead, tagsIgnored)
    }
}
