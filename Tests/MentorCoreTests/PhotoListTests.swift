import Testing
@testable import MentorCore

/// Card field 8 as a list of photos (PROTOCOL.md §6): 0 to 6 concatenated 37-byte references,
/// the main one first; one photo encodes exactly as the single photo did.
@Suite struct PhotoListTests {
    static func ref(_ n: UInt8, size: UInt32 = 1000, format: PhotoRef.Format = .jpeg) -> PhotoRef {
        PhotoRef(hash: [UInt8](repeating: n, count: 32), size: size, format: format)
    }

    /// The body of a card whose field 8 holds `value` as it is (no list encoding in between).
    static func body(photoField value: [UInt8]) -> [UInt8] {
        var f = FieldList()
        f.set(ProfileCard.Field.photo.rawValue, value)
        return f.encoded
    }

    @Test func aListRoundTripsInOrderAndTheFirstIsTheMainPhoto() throws {
        let photos = [Self.ref(3, format: .png), Self.ref(1), Self.ref(2, size: 4 * 1024 * 1024, format: .webp)]
        let card = ProfileCard(name: "Ana", photos: photos)
        let decoded = try ProfileCard(body: card.body)
        #expect(decoded.photos == photos && decoded.mainPhoto == photos[0])
        #expect(try card.validated() == card)
        #expect(PhotoRef.encodeList(photos).count == 3 * 37)
        #expect(PhotoRef.encodeList(photos) == photos[0].encoded + photos[1].encoded + photos[2].encoded)
    }

    /// A card written before field 8 was a list (one 37-byte reference) decodes as a list of
    /// one, and a list of one encodes to the same bytes.
    @Test func onePhotoEncodesExactlyAsTheSinglePhotoDid() throws {
        let photo = Self.ref(7, size: 48_213)
        let old = Self.body(photoField: photo.encoded)
        #expect(try ProfileCard(body: old).photos == [photo])
        #expect(ProfileCard(photos: [photo]).body == old)
    }

    @Test func anEmptyValueRemovesEveryPhoto() throws {
        let card = try ProfileCard(body: Self.body(photoField: []))
        #expect(card.photos == [] && card.mainPhoto == nil)
        #expect(ProfileCard(photos: []).body == Self.body(photoField: []))
        #expect(try ProfileCard(body: ProfileCard(name: "Ana").body).photos == nil, "no field 8: the photos stay as they are")
    }

    @Test(arguments: [1, 36, 38, 73, 75, 221])
    func aLengthThatIsNotAMultipleOf37IsRefused(length: Int) {
        let value = Array(PhotoRef.encodeList((1...6).map { Self.ref($0) }).prefix(length))
        #expect(throws: RecordError(.malformed, "profile photos field is \(length) bytes; it must be a list of 37-byte photo references (a multiple of 37)")) {
            try ProfileCard(body: Self.body(photoField: value))
        }
    }

    @Test func aPhotoNamedTwiceIsRefused() {
        let value = PhotoRef.encodeList([Self.ref(1), Self.ref(2), Self.ref(1, size: 5)])
        let error = RecordError(.invalidBody, "profile names photo \(String(repeating: "01", count: 8)) twice; each photo may appear once")
        #expect(throws: error) { try ProfileCard(body: Self.body(photoField: value)) }
        #expect(throws: error) { try ProfileCard(photos: [Self.ref(1), Self.ref(2), Self.ref(1)]).validated() }
    }

    @Test func sixPhotosAreAcceptedAndASeventhIsRefused() throws {
        let six = (1...6).map { Self.ref($0) }
        #expect(try ProfileCard(photos: six).validated().photos == six)
        let error = RecordError(.invalidBody, "profile names 7 photos; at most 6 allowed")
        #expect(throws: error) { try ProfileCard(body: Self.body(photoField: PhotoRef.encodeList(six + [Self.ref(9)]))) }
        #expect(throws: error) { try ProfileCard(photos: six + [Self.ref(9)]).validated() }
    }

    @Test func eachReferenceIsCheckedAsTheSinglePhotoWas() {
        var bad = Self.ref(2).encoded
        bad[36] = 9   // no such format
        #expect(throws: RecordError(.invalidBody, "profile photo has an unknown format code")) {
            try ProfileCard(body: Self.body(photoField: Self.ref(1).encoded + bad))
        }
    }
}
