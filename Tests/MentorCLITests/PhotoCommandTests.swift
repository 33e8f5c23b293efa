import Foundation
import Testing
import MentorAPI
import MentorArguments
@testable import MentorCLI

extension CommandLineTests {
    /// `profile photo add|remove|order` and `profile show --save-photos DIR | --open`, parsed and
    /// run against a fake daemon and a fake host.
    @Suite struct PhotoCommandTests {
        static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 1, count: 100)
        static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 2, count: 700_000)

        /// A card whose photos are `hashes` (each a JPEG of 104 bytes as far as the card says).
        static func card(_ hashes: [String]) -> JSON {
            let photos: [JSON] = hashes.map { ["hash": .string($0), "size": 104, "type": "image/jpeg"] }
            return ["id": .string(cliAna), "name": "Ana", "role": "student", "bio": nil, "courses": [], "wage": nil, "budget": nil,
                    "availability": nil, "photo": photos.first ?? .null, "photos": .array(photos), "conflicts": [:],
                    "forked": false, "updatedAt": 1_764_400_000_000]
        }

        /// A daemon holding `blobs` (hash → bytes; others are pending), whose card names `hashes`.
        static func daemon(_ hashes: [String], blobs: [String: [UInt8]]) -> CLIFakeDaemon {
            CLIFakeDaemon { method, params in
                switch method {
                case "profile.show": return card(hashes)
                case "blob.get":
                    guard let hash = params["hash"]?.stringValue, let bytes = blobs[hash] else {
                        throw RPCError(.notFound, "no blob on this node")
                    }
                    let offset = Int(params["offset"]?.intValue ?? 0)
                    let chunk = bytes[offset..<min(bytes.count, offset + 512 * 1024)]
                    return ["data": .string(Data(chunk).base64EncodedString()), "size": .int(Int64(bytes.count)), "type": "image/jpeg"]
                default: return card(hashes)
                }
            }
        }

        @Test func photoCommandsParseTheirArgumentsAndRefuseBadOnes() throws {
            #expect(try cliParsed(["profile", "photo", "add", "me.jpg"], as: MentormateCLI.Profile.PhotoAdd.self).0.file == "me.jpg")
            #expect(try cliParsed(["profile", "photo", "remove", "2"], as: MentormateCLI.Profile.PhotoRemove.self).0.index == 2)
            #expect(try cliParsed(["profile", "photo", "order", "3,1,2"], as: MentormateCLI.Profile.PhotoOrder.self).0.order == [3, 1, 2])
            #expect(try cliParsed(["profile", "photo", "order", " 2, 1"], as: MentormateCLI.Profile.PhotoOrder.self).0.order == [2, 1])
            let show = try cliParsed(["profile", "show", "mm1zg69v7y", "--save-photos", "out", "--open"], as: MentormateCLI.Profile.Show.self).0
            #expect(show.id == "mm1zg69v7y" && show.savePhotos == "out" && show.open)

            #expect(cliUsageError(["profile", "photo", "remove", "0"])?.message == "N must be a photo number, 1 to 6, not '0'")
            #expect(cliUsageError(["profile", "photo", "remove", "seven"])?.message == "N must be a photo number, 1 to 6, not 'seven'")
            #expect(cliUsageError(["profile", "photo", "remove"])?.message == "`profile photo remove` needs N")
            #expect(cliUsageError(["profile", "photo", "order", "3,1,3"])?.message == "ORDER names photo 3 twice; give each photo's number once")
            #expect(cliUsageError(["profile", "photo", "order", "3,,1"])?.message.hasPrefix("each number of ORDER must be a photo number") == true)
            #expect(cliUsageError(["profile", "photo", "order", "1,2,3,4,5,6,7"])?.message.contains("1 to 6, not '7'") == true)
            #expect(cliUsageError(["profile", "photo", "add"])?.message == "`profile photo add` needs FILE")
            #expect(cliUsageError(["profile", "photo"])?.message == "`profile photo` needs a subcommand: add or remove or order")
            #expect(cliUsageError(["profile", "photo", "ad", "x"])?.message == "unknown subcommand `ad` for `profile photo`; did you mean `profile photo add`?")
            #expect(cliUsageError(["profile", "show", "--save-photos", ""])?.message == "--save-photos needs a directory")
        }

        @Test func theHelpListsThePhotoCommands() throws {
            guard case .print(let group)? = try? MentormateCLI.parse(["profile", "--help"]) else { Issue.record("no help"); return }
            #expect(group.contains("photo add") && group.contains("photo remove") && group.contains("photo order"))
            guard case .print(let photo)? = try? MentormateCLI.parse(["profile", "photo", "--help"]) else { Issue.record("no help"); return }
            #expect(photo.contains("USAGE: mentormate profile photo add FILE") && photo.contains("order"))
            guard case .print(let show)? = try? MentormateCLI.parse(["help", "profile", "show"]) else { Issue.record("no help"); return }
            #expect(show.contains("--save-photos DIR") && show.contains("--open"))
        }

        @Test func addUploadsThenAppendsAndRemoveAndOrderSendTheirNumbers() throws {
            let daemon = CLIFakeDaemon { method, params in
                switch method {
                case "blob.put": return ["hash": "77aa", "size": 104, "type": "image/jpeg"]
                case "profile.show": return Self.card(["5f1e"])
                default: return Self.card(["5f1e", "77aa"])
                }
            }
            let host = CLIFakeHost(daemon)
            host.files["me.jpg"] = .success(Self.jpeg)
            #expect(runCLI(["profile", "photo", "add", "me.jpg"], host) == .success, "\(host.stderr)")
            #expect(daemon.methods == ["profile.show", "blob.put", "profile.photo.add"])
            #expect(daemon.calls.last?.params == ["hash": "77aa"])
            #expect(host.stdout.contains("Photo added (2 of at most 6).") && host.stdout.contains("photo 2"))

            #expect(runCLI(["profile", "photo", "remove", "2"], host) == .success)
            #expect(daemon.calls.last?.method == "profile.photo.remove" && daemon.calls.last?.params == ["index": 2])
            #expect(runCLI(["profile", "photo", "order", "2,1"], host) == .success)
            #expect(daemon.calls.last?.method == "profile.photo.order" && daemon.calls.last?.params == ["order": [2, 1]])
        }

        @Test func aSeventhPhotoIsRefusedBeforeAnythingIsUploaded() {
            let daemon = Self.daemon(["1", "2", "3", "4", "5", "6"], blobs: [:])
            let host = CLIFakeHost(daemon)
            host.files["me.jpg"] = .success(Self.jpeg)
            #expect(runCLI(["profile", "photo", "add", "me.jpg"], host) == .failure)
            #expect(daemon.methods == ["profile.show"])
            #expect(host.stderr.contains("your card has 6 photos, the most a card may have; nothing was uploaded"))
        }

        @Test func savePhotosWritesEveryPhotoNamedByItsContent() throws {
            let daemon = Self.daemon(["aa", "bb"], blobs: ["aa": Self.jpeg, "bb": Self.png])
            let host = CLIFakeHost(daemon)
            #expect(runCLI(["profile", "show", "--save-photos", "out"], host) == .success, "\(host.stderr)")
            #expect(host.directories == ["out"])
            let first = host.written["out/1.jpg"], second = host.written["out/2.png"]
            #expect(first == Self.jpeg)
            let same = second == Self.png   // two chunks of blob.get
            #expect(same)
            #expect(host.stdout.contains("Saved 2 photos: out/1.jpg, out/2.png"))

            let json = CLIFakeHost(Self.daemon(["aa"], blobs: ["aa": Self.jpeg]))
            #expect(runCLI(["profile", "show", "--json", "--save-photos", "dir/"], json) == .success, "\(json.stderr)")
            #expect(json.stdout.contains("\"saved\"") && json.stdout.contains("\"dir/1.jpg\""), "\(json.stdout)")
        }

        @Test func savePhotosNeverOverwritesAndWritesNothingWhileAPhotoIsPending() {
            let host = CLIFakeHost(Self.daemon(["aa", "bb"], blobs: ["aa": Self.jpeg, "bb": Self.png]))
            host.files["out/2.png"] = .success([1])
            #expect(runCLI(["profile", "show", "--save-photos", "out"], host) == .failure)
            #expect(host.stderr.contains("out/2.png exists already; nothing was written (files are never overwritten)"))
            #expect(host.written.isEmpty && host.directories.isEmpty)

            let pending = CLIFakeHost(Self.daemon(["aa", "bb"], blobs: ["aa": Self.jpeg]))
            #expect(runCLI(["profile", "show", "--save-photos", "out"], pending) == .failure)
            #expect(pending.stderr.contains("photo 2 (bb…) has not arrived on this node yet (pending)"))
            #expect(pending.written.isEmpty)

            let none = CLIFakeHost(Self.daemon([], blobs: [:]))
            #expect(runCLI(["profile", "show", "--save-photos", "out"], none) == .failure)
            #expect(none.stderr.contains("Ana has no photos; nothing was written"))
        }

        @Test func openHandsTheMainPhotoToXdgOpenOnlyOnADesktop() {
            let daemon = Self.daemon(["aa", "bb"], blobs: ["aa": Self.jpeg, "bb": Self.png])
            let host = CLIFakeHost(daemon)
            host.programs["xdg-open"] = "/usr/bin/xdg-open"
            #expect(runCLI(["profile", "show", "--open"], host) == .failure)
            #expect(host.stderr.contains("--open needs a desktop session, and neither DISPLAY nor WAYLAND_DISPLAY is set"))
            #expect(host.ran.isEmpty)

            let noOpener = CLIFakeHost(daemon)
            noOpener.environmentValues["WAYLAND_DISPLAY"] = "wayland-0"
            #expect(runCLI(["profile", "show", "--open"], noOpener) == .failure)
            #expect(noOpener.stderr.contains("--open needs xdg-open, which is not on the PATH"))

            let desktop = CLIFakeHost(daemon)
            desktop.environmentValues["DISPLAY"] = ":0"
            desktop.programs["xdg-open"] = "/usr/bin/xdg-open"
            #expect(runCLI(["profile", "show", "--open"], desktop) == .success, "\(desktop.stderr)")
            #expect(desktop.ran == [["/usr/bin/xdg-open", "/tmp/mentormate-photo-TEST/photo-1.jpg"]])
            #expect(desktop.written["/tmp/mentormate-photo-TEST/photo-1.jpg"] == Self.jpeg)

            let noViewer = CLIFakeHost(daemon)
            noViewer.environmentValues["DISPLAY"] = ":0"
            noViewer.programs["xdg-open"] = "/usr/bin/xdg-open"
            noViewer.programStatus = 3
            #expect(runCLI(["profile", "show", "--open"], noViewer) == .failure)
            #expect(noViewer.stderr.contains("xdg-open failed (exit status 3); the photo is in /tmp/mentormate-photo-TEST/photo-1.jpg"))
        }

        @Test func theCardListsItsPhotosNumbered() {
            let text = ClientFormat.card(Self.card(["aa", "bb"]), in: TimeZone(identifier: "UTC")!)
            #expect(text.contains("photo 1") && text.contains("main") && text.contains("photo 2"))
            let one = ClientFormat.card(Self.card(["aa"]), in: TimeZone(identifier: "UTC")!)
            #expect(one.contains("photo ") && !one.contains("photo 1"))
        }
    }
}
