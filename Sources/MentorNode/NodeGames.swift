import MentorAPI
import MentorCore

// MARK: Games (docs/API.md "Games")

extension Node {
    /// The catalogue's games that pass the filters, by name. Needs no account: the catalogue is
    /// static and the same on every node; nothing is written.
    func games(_ request: GamesRequest) throws -> GamesResult {
        let catalogue = try gameCatalogue()
        if let p = request.players, !(1...100).contains(p) { throw RPCError(.invalidParams, "games: players must be from 1 to 100") }
        if let t = request.time, !(1...1440).contains(t) { throw RPCError(.invalidParams, "games: time must be from 1 to 1440 minutes") }
        let games = catalogue.filter(search: request.search, players: request.players.map { Int($0) }, minutes: request.time.map { Int($0) })
        return GamesResult(games: games.map(Self.gameInfo))
    }

    /// One game by its name or a unique prefix (case, accents and punctuation do not count).
    /// Several games starting so is -32005, none -32004; both name the candidates (in the
    /// message, and as `data.names`).
    ///
    /// With the open meetups for the game: those whose topic is the game's catalogue name
    /// (`meetup create --game` stores the catalogue's spelling when the name is found there).
    func gameShow(_ request: GameShowRequest, _ caller: Requester? = nil) throws -> GameInfo {
        let catalogue = try gameCatalogue()
        let text = request.name.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { throw RPCError(.invalidParams, "game.show: name is empty; `mentormate games` lists the games") }
        guard text.count <= 200 else { throw RPCError(.invalidParams, "game.show: name has \(text.count) characters, at most 200") }
        switch catalogue.lookup(text) {
        case .found(let game):
            var info = Self.gameInfo(game)
            info.meetups = openMeetups(game: game.name, caller)
            return info
        case .ambiguous(let names):
            throw RPCError(.ambiguous, "\"\(text)\" starts \(names.count) games: \(names.joined(separator: ", ")); give more of the name",
                           data: try? JSONValueEncoder().encode(GameNamesData(names: names)))
        case .notFound(let near):
            let hint = near.isEmpty ? "`mentormate games --search WORD` searches the catalogue"
                                    : "did you mean: \(near.joined(separator: ", "))?"
            throw RPCError(.notFound, "no game \"\(text)\" in the catalogue; \(hint)",
                           data: try? JSONValueEncoder().encode(GameNamesData(names: near)))
        }
    }

    private func gameCatalogue() throws -> GameCatalogue {
        let catalogue = GameCatalogue.standard
        guard !catalogue.games.isEmpty else {
            throw RPCError(.internalError, "the games catalogue of this build is unreadable; reinstall mentormated")
        }
        return catalogue
    }

    static func gameInfo(_ g: GameCatalogue.Game) -> GameInfo {
        GameInfo(name: g.name, year: Int64(g.year), playersMin: Int64(g.players.lowerBound), playersMax: Int64(g.players.upperBound),
                 timeMin: Int64(g.minutes.lowerBound), timeMax: Int64(g.minutes.upperBound), minAge: Int64(g.minAge),
                 description: g.description)
    }
}
