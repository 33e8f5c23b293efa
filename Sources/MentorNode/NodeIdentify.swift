import MentorAPI
import MentorCore
import MentorStore

// MARK: Identify (docs/API.md `identify`)

extension Node {
    /// The entries of the catalogue closest to the traits given. Needs no account: the catalogue
    /// is static and the same on every node. Every trait word is checked (a wrong one is -32602
    /// naming the accepted values); nothing is written.
    ///
    /// The seam for the posts branch: recent posts tagged with a match's name are to be added
    /// by a function taking the matches and a list of posts; nothing here reads posts yet.
    func identify(_ request: IdentifyRequest, _ caller: Requester? = nil) throws -> IdentifyResult {
        let catalogue = Catalogue.standard
        guard !catalogue.entries.isEmpty else {
            throw RPCError(.internalError, "the mineral catalogue of this build is unreadable; reinstall mentormated")
        }
        let limit = request.limit ?? 5
        guard (1...20).contains(limit) else { throw RPCError(.invalidParams, "identify: limit must be from 1 to 20") }
        let traits: Traits
        do {
            traits = try Traits.parse(colour: request.color, luster: request.luster, cleavage: request.cleavage,
                                      hardness: request.hardness.map { String($0) }, streak: request.streak)
        } catch {
            throw RPCError(.invalidParams, "identify: \(error.message)")
        }
        guard !traits.isEmpty else {
            throw RPCError(.invalidParams, "identify: give at least one trait: color, luster, cleavage, hardness or streak")
        }
        return IdentifyResult(matches: catalogue.identify(traits, limit: Int(limit)).map { m in
            let e = m.entry
            return IdentifyResult.Match(
                name: e.name, kind: e.kind.rawValue, score: Int64(m.score), reasons: m.reasons, colors: e.colours,
                luster: e.lusters.map(\.rawValue), streak: e.streak, hardness: Catalogue.formatRange(e.hardness),
                cleavage: e.cleavage.rawValue, specificGravity: Catalogue.formatRange(e.specificGravity),
                crystalSystem: e.crystalSystem, note: e.note, posts: taggedPosts(e.name, caller))
        })
    }

    /// The three newest posts tagged with a catalogue name, as the caller may see them (its
    /// hidden posts and blocked accounts left out; without an account, everyone's). A failed
    /// read gives none: identify still answers.
    func taggedPosts(_ name: String, _ caller: Requester?) -> [IdentifyResult.TaggedPost] {
        guard let tag = PostTags.normalize(name) else { return [] }
        var filter = PostFilter(tag: tag, limit: 3)
        if let caller, let me = (try? replica.nodeAccount(uid: caller.uid))?.flatMap({ $0 })?.account {
            filter.excludedAuthors = (try? replica.blockedAccounts(of: me)).map { Set($0) } ?? []
            filter.excluded = (try? replica.hiddenPosts(of: me)) ?? []
        }
        return ((try? replica.posts(filter)) ?? []).map {
            IdentifyResult.TaggedPost(id: Self.shortPostID($0.id), author: $0.account.id, name: names[$0.account], caption: $0.caption,
                                      created: Int64(clamping: $0.created))
        }
    }
}
