import MentorAPI
import MentorCore
import MentorStore

// MARK: Identify (docs/API.md `identify`)

extension Node {
    /// The entries of the catalogue closest to the traits given. Needs no account: the catalogue
    /// is static and the same on every node. Every trait word is checked (a wrong one is -32602
    /// naming the accepted values); nothing is written.
    ///
    /// With `post`, the traits not given come from the post's tags (`TagTraits`), and the result
    /// says which tags were read. Each match carries the newest posts tagged with its name.
    func identify(_ request: IdentifyRequest, _ caller: Requester? = nil) throws -> IdentifyResult {
        let catalogue = Catalogue.standard
        guard !catalogue.entries.isEmpty else {
            throw RPCError(.internalError, "the mineral catalogue of this build is unreadable; reinstall mentormated")
        }
        let limit = request.limit ?? 5
        guard (1...20).contains(limit) else { throw RPCError(.invalidParams, "identify: limit must be from 1 to 20") }
        var given = (color: request.color, luster: request.luster, cleavage: request.cleavage,
                     hardness: request.hardness.map { String($0) }, streak: request.streak)
        // `--post`: the post's tags give every trait not given in the request (TagTraits.swift).
        var fromPost: (id: String, tags: TagTraits)?
        if let text = request.post {
            let id = try postID(text)
            guard let post = try replica.post(id) else { throw RPCError(.notFound, "no post \(text) on this node") }
            let read = TagTraits.read(post.tags)
            guard !read.read.isEmpty || request.color != nil || request.luster != nil || request.cleavage != nil
                    || request.hardness != nil || request.streak != nil else {
                let tags = post.tags.isEmpty ? "no tags" : "the tags " + post.tags.joined(separator: ", ")
                throw RPCError(.invalidValue, "post \(Self.shortPostID(id)) has \(tags): none names a trait identify reads "
                               + "(tags like metallic, streak-black, hardness-6, cleavage-perfect, or a colour name)"
                               + (read.ignored.isEmpty ? "" : "; not used: " + read.ignored.joined(separator: "; ")))
            }
            given.color = given.color ?? read.colour
            given.luster = given.luster ?? read.luster
            given.cleavage = given.cleavage ?? read.cleavage
            given.hardness = given.hardness ?? read.hardness
            given.streak = given.streak ?? read.streak
            fromPost = (Self.shortPostID(id), read)
        }
        let traits: Traits
        do {
            traits = try Traits.parse(colour: given.color, luster: given.luster, cleavage: given.cleavage,
                                      hardness: given.hardness, streak: given.streak)
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
        }, post: fromPost?.id, tagsRead: fromPost?.tags.read, tagsIgnored: fromPost?.tags.ignored)
    }

    /// The three newest posts tagged with a catalogue name, as the caller may see them (its
    /// hidden posts and blocked accounts left out; without an account, everyone's). A failed
    /// read gives none: identify still answers.
    func taggedPosts(_ name: String, _ caller: Requester?) -> [IdentifyResult.TaggedPost] {
        guard let tag = PostTags.normalize(name) else { return [] }
        var filter = PostFilter(tag: tag, limit: 3)
        if let me = account(ifAny: caller) {
            filter.excludedAuthors = (try? hiddenAccounts(of: me)) ?? []
            filter.excluded = (try? replica.hiddenPosts(of: me)) ?? []
        }
        return ((try? replica.posts(filter)) ?? []).map {
            IdentifyResult.TaggedPost(id: Self.shortPostID($0.id), author: $0.account.id, name: names[$0.account], caption: $0.caption,
                                      created: Int64(clamping: $0.created))
        }
    }
}
