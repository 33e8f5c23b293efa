/// `identify --post ID` (issue 17): the traits a post's tags name. The vocabulary (API.md
/// `identify`), over canonical tags (lower case, a dash for a space):
///
/// - hardness: `hardness-N` or `mohs-N`, N from 1 to 10 (`hardness-5.5`, `hardness-5,5`,
///   `hardness-5-5` are 5.5);
/// - streak: `streak-COLOUR` (`streak-black`, `streak-red-brown`);
/// - cleavage: `cleavage-none|poor|good|perfect`, and `no-cleavage` for none;
/// - luster: a luster word alone (`metallic`, `non-metallic`, `submetallic`, `vitreous`, `pearly`,
///   `silky`, `greasy`, `resinous`, `adamantine`, `dull`, `earthy`) or `luster-X` / `lustre-X`;
/// - colour: `light`, `dark`, a colour name of the catalogue alone (`black`, `steel-grey`, `green`)
///   or `color-X` / `colour-X`.
///
/// Each trait is read from the first tag that names it, in the post's tag order; a later tag of
/// the same trait, and a tag of the vocabulary with a wrong value (`hardness-12`), are reported as
/// ignored with the reason; any other tag (`quarry`, a mineral's name) is not read and not reported.
public struct TagTraits: Sendable, Equatable {
    /// The traits' text forms, as `Traits.parse` takes them (each already checked).
    public var colour: String?
    public var luster: String?
    public var cleavage: String?
    public var hardness: String?
    public var streak: String?
    /// "TAG: TRAIT VALUE" for each tag read, in tag order.
    public var read: [String] = []
    /// "TAG: WHY" for each tag of the vocabulary that was not used.
    public var ignored: [String] = []

    public init() {}

    public var traits: Traits {
        // Every value was checked when it was read.
        (try? Traits.parse(colour: colour, luster: luster, cleavage: cleavage, hardness: hardness, streak: streak)) ?? Traits()
    }

    enum Trait: String { case colour = "color", luster, cleavage, hardness, streak }

    /// Which trait a tag names and the value's text, if it belongs to the vocabulary.
    static func classify(_ tag: String) -> (Trait, String)? {
        func after(_ prefixes: [String]) -> String? {
            for p in prefixes where tag.hasPrefix(p) && tag.count > p.count { return String(tag.dropFirst(p.count)) }
            return nil
        }
        if let v = after(["hardness-", "mohs-"]) {
            // 5-5 and 5,5 are 5.5: a tag has no spaces, and a comma or a dash may stand for the point.
            let parts = v.split(separator: "-", omittingEmptySubsequences: false)
            let number = parts.count == 2 ? parts.joined(separator: ".") : v.replacingOccurrences(of: ",", with: ".")
            return (.hardness, number)
        }
        if let v = after(["streak-"]) { return (.streak, v) }
        if tag == "no-cleavage" { return (.cleavage, "none") }
        if let v = after(["cleavage-"]) { return (.cleavage, v) }
        if let v = after(["luster-", "lustre-"]) { return (.luster, v) }
        if let v = after(["color-", "colour-"]) { return (.colour, v) }
        if lusterWords.contains(tag) { return (.luster, tag) }
        if tag == "light" || tag == "dark" || Catalogue.colours[Catalogue.canonicalColour(tag)] != nil { return (.colour, tag) }
        return nil
    }

    static let lusterWords: Set<String> = ["metallic", "non-metallic", "nonmetallic", "submetallic", "vitreous", "pearly", "silky",
                                           "greasy", "resinous", "adamantine", "dull", "earthy"]

    /// Reads the traits of `tags` (canonical, in the post's order).
    public static func read(_ tags: [String]) -> TagTraits {
        var out = TagTraits()
        for tag in tags {
            guard let (trait, value) = classify(tag) else { continue }
            let path: WritableKeyPath<TagTraits, String?>
            switch trait {
            case .colour: path = \.colour
            case .luster: path = \.luster
            case .cleavage: path = \.cleavage
            case .hardness: path = \.hardness
            case .streak: path = \.streak
            }
            if let first = out[keyPath: path] {
                out.ignored.append("\(tag): a second \(trait.rawValue) (\(first) was read first)")
                continue
            }
            do {
                switch trait {
                case .colour: _ = try Traits.parse(colour: value)
                case .luster: _ = try Traits.parse(luster: value)
                case .cleavage: _ = try Traits.parse(cleavage: value)
                case .hardness: _ = try Traits.parse(hardness: value)
                case .streak: _ = try Traits.parse(streak: value)
                }
            } catch {
                out.ignored.append("\(tag): \(error.message)")
                continue
            }
            out[keyPath: path] = value
            out.read.append("\(tag): \(trait.rawValue) \(value)")
        }
        return out
    }
}
