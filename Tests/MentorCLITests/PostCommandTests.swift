import Foundation
import Testing
import MentorAPI
@testable import MentorCLI

/// `post …`, `comment …`, `posts`, `explore`: what they parse, refuse and print.
@Suite struct PostCommandTests {
    @Test func postCreateTakesOneToFourPhotosACaptionAndTags() throws {
        let (create, _, _) = try cliParsed(["post", "create", "--photo", "a.jpg", "--photo", "b.png", "--caption", "Quartz", "--tag", "quartz", "--tag", "Clear"],
                                           as: MentormateCLI.Post.Create.self)
        #expect(create.photos == ["a.jpg", "b.png"] && create.caption == "Quartz" && create.tags == ["quartz", "Clear"])
        #expect(cliUsageError(["post", "create", "--caption", "no photo"])?.message.contains("1 to 4 photos") == true)
        let five = ["post", "create"] + (1...5).flatMap { ["--photo", "\($0).jpg"] }
        #expect(cliUsageError(five)?.message.contains("1 to 4 photos") == true)
        #expect(cliUsageError(["post", "create", "--photo", "a.jpg", "--caption", String(repeating: "x", count: 2001)])?.message.contains("at most 2,000") == true)
        #expect(cliUsageError(["post", "edit", "abcd"])?.message.contains("nothing to change") == true)
    }

    @Test func commentIsACommandAndAGroup() throws {
        let (add, _, _) = try cliParsed(["comment", "abcd12", "Nice find"], as: MentormateCLI.Comment.Add.self)
        #expect(add.id == "abcd12" && add.text == "Nice find")
        #expect(try cliParsed(["comment", "delete", "0123ab"], as: MentormateCLI.Comment.Delete.self).0.id == "0123ab")
        #expect(try cliParsed(["comment", "hide", "0123ab"], as: MentormateCLI.Comment.Hide.self).0.id == "0123ab")
        #expect(cliUsageError(["comment", "abcd12", "  "])?.message.contains("empty") == true)
        #expect(cliUsageError(["post", "frobnicate", "x"]) != nil)
    }

    @Test func postsFiltersAndSearchAlone() throws {
        let (posts, _, _) = try cliParsed(["posts", "--tag", "agate", "--author", cliBen, "--following", "--limit", "5"], as: MentormateCLI.Posts.self)
        #expect(posts.tag == "agate" && posts.author == cliBen && posts.following && posts.limit == 5)
        #expect(cliUsageError(["posts", "--search", "agate", "--tag", "x"])?.message.contains("--search") == true)
        #expect(cliUsageError(["posts", "--limit", "0"]) != nil)
        #expect(try cliParsed(["explore", "--limit", "3"], as: MentormateCLI.Explore.self).0.limit == 3)
    }

    @Test func aPostPrintsItsCountsCommentsAndHiddenMark() {
        let json: JSON = ["id": "0123456789ab", "author": .string(cliBen), "name": "Ana", "created": 1_767_225_600_000, "caption": "Banded agate",
                          "tags": ["agate"], "photos": [["hash": "ab", "size": 1, "type": "image/png"]], "likes": 2, "comments": 1, "liked": true,
                          "comment_list": [["id": "aaaaaaaaaaaa", "post": "0123456789ab", "author": .string(cliBen), "name": "Cy", "created": 1,
                                            "text": "meh", "hidden": true]]]
        let text = ClientFormat.post(json, in: TimeZone(identifier: "UTC") ?? .current, comments: true)
        #expect(text.contains("Banded agate") && text.contains("#agate") && text.contains("Likes: 2 (you like it)") && text.contains("Comments: 1"))
        #expect(text.contains("[aaaaaaaaaaaa] Cy: meh (hidden"))
        #expect(ClientFormat.posts(["posts": []], in: .current) == "No posts.")
    }
}
