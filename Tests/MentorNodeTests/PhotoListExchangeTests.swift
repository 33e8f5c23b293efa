import Dispatch
import Foundation
import MentorCore
import MentorCrypto
import MentorStore
import Testing
@testable import MentorNode

/// The photo exchange over a real replica (fake links and shell, `PhotoExchangeTests`): a card
/// naming three photos makes all three wanted, each asked of a link, and each one fetched is
/// stored — the second and third are named photos too, not strangers' blobs to drop.
@Suite struct PhotoListExchangeTests {
    static func png(_ tag: UInt8, size: Int) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: tag, count: size - 8)
    }

    @Test func everyPhotoOfACardIsWantedAndStoredNotOnlyTheFirst() throws {
        let replica = try Replica(path: ":memory:", settings: Replica.Settings())
        let store = PhotoStore(
            missingPhotos: { (limit) throws(StoreError) in try replica.missingPhotos(limit: limit) },
            blobBytes: { () throws(StoreError) in try replica.blobUsage().bytes },
            authorUsage: { (author) throws(StoreError) in try replica.authorUsage(author) },
            localAccounts: { [] },
            isNamedPhoto: { (hash) throws(StoreError) in try replica.isNamedPhoto(hash: hash) },
            putBlob: { (data) throws(BlobError) in _ = try replica.putBlob(data) },
            blob: { (hash) throws(StoreError) in try replica.blob(hash: hash)?.data })
        let shell = PhotoExchangeTests.FakeShell()
        let clock = ManualClock()
        let exchange = PhotoExchange<PhotoExchangeTests.FakeShell>(fetcher: .init(retry: .milliseconds(500), deferral: .seconds(10),
                                                    photoBudget: 2 << 30, authorBudget: 64 << 20),
                                     rules: .init(lookupInterval: .seconds(1), answerTimeout: .seconds(30)),
                                     store: store, logger: CaptureLogger(), clock: { clock.now })
        exchange.shell = shell

        let data = [Self.png(1, size: 3000), Self.png(2, size: 1000), Self.png(3, size: 2000)]
        let refs = data.map { PhotoRef(hash: BLAKE2b.hash($0, outputLength: 32), size: UInt32($0.count), format: .png) }
        var ben = RecordWriter(keys: try SigningKeyPair(seed: [UInt8](repeating: 0xB0, count: 32)))
        let card = try ben.profile(ProfileCard(name: "Ben", photos: refs), at: 1000)
        #expect(try replica.apply(card.encoded) == .applied)
        #expect(PhotoSync.setsAPhoto(card.encoded))

        var links: [PhotoExchangeTests.FakeLink] = []
        for serial in UInt64(1)...3 {
            let link = PhotoExchangeTests.FakeLink(serial: serial)
            links.append(link)
            shell.links.append(link)
            exchange.linkEstablished()
        }
        let wants = shell.wants
        #expect(Set(wants.map(\.hash)) == Set(refs.map(\.hash)), "all three photos are asked for")
        #expect(Set(wants.map(\.link)).count == 3, "one per link")

        for want in wants {
            guard let link = links.first(where: { $0.serial == want.link }),
                  let bytes = data.first(where: { BLAKE2b.hash($0, outputLength: 32) == want.hash }) else { continue }
            for part in PhotoSync.answer(hash: want.hash, blob: bytes) {
                guard case .blob(let h, let total, let offset, let chunk) = part else { continue }
                let problem = exchange.blobPart(hash: h, total: total, offset: offset, bytes: chunk, on: link)
                #expect(problem == nil)
            }
        }
        for (ref, bytes) in zip(refs, data) {
            let held = try replica.blob(hash: ref.hash)?.data
            #expect(held == bytes, "photo of \(ref.size) bytes stored")
        }
        #expect(try replica.missingPhotos().isEmpty)
    }
}
