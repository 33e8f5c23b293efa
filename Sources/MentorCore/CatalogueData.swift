// The mineral and rock catalogue shipped with the product (docs/API.md `identify`).
//
// Written and checked by the MentorMate team from standard references: Klein & Dutrow, *Manual of
// Mineral Science* (23rd ed.); Nesse, *Introduction to Mineralogy*; mindat.org; webmineral.com
// (the Mineralogy Database). Mineral values are those of the pure species as those sources give
// them; rock values are typical of the bulk rock (hardness is that of its main minerals, "streak"
// the colour of its powder), for a hand specimen, not a thin section.
//
// Why a table compiled in rather than a file installed beside the program: the catalogue is
// static, must be the same on every node (the quiz of a day is generated from it), and a text
// compiled into the binary cannot go missing or differ between installs. It is still kept as
// data — tab-separated text, one row per entry — parsed and validated by `Catalogue.parse`
// (every node does so at start; the tests check every row).
//
// Columns (tab-separated): name, kind (mineral|rock), colours (comma-separated, from
// `Catalogue.colours`), lusters (comma-separated, from `Luster`), streak (one colour), Mohs
// hardness "min-max", cleavage (none|poor|good|perfect; "none" = fracture only), specific
// gravity "min-max", crystal system (or "none" for rocks and amorphous matter), note.
//
// The quiz of a day (docs/PROTOCOL.md §15) draws rows by their index: a change to any row or to
// their order changes every day's questions, so it goes with a new quiz domain (`QuizSeed`).

extension Catalogue {
    static let table = """
quartz	mineral	colourless,white,pink,purple,grey,brown,black	vitreous	white	7-7	none	2.65-2.65	trigonal	Conchoidal fracture and six-sided prisms; scratches glass.
orthoclase	mineral	white,pink,orange,grey	vitreous	white	6-6.5	perfect	2.55-2.63	monoclinic	Two cleavages at right angles; the pink feldspar of many granites.
microcline	mineral	white,pink,green	vitreous	white	6-6.5	perfect	2.54-2.57	triclinic	Cross-hatched twinning; the green variety is amazonite.
plagioclase	mineral	white,grey,blue	vitreous,pearly	white	6-6.5	perfect	2.62-2.76	triclinic	Fine parallel striations on one cleavage face.
muscovite	mineral	colourless,silver-white,pale-brown	vitreous,pearly	white	2-2.5	perfect	2.76-2.88	monoclinic	Peels into thin, clear, flexible sheets.
biotite	mineral	black,dark-green,brown	vitreous,pearly	white	2.5-3	perfect	2.7-3.3	monoclinic	Dark mica that peels into flexible sheets.
hornblende	mineral	black,dark-green	vitreous	white	5-6	good	3.0-3.4	monoclinic	Two cleavages at about 56 and 124 degrees.
augite	mineral	black,dark-green	vitreous	white	5.5-6	good	3.2-3.6	monoclinic	Stubby prisms with two cleavages near right angles.
olivine	mineral	green,yellow	vitreous	white	6.5-7	poor	3.2-4.4	orthorhombic	Olive-green glassy grains, common in basalt.
garnet	mineral	red,red-brown,black	vitreous	white	6.5-7.5	none	3.5-4.3	cubic	Twelve-sided crystals without cleavage.
calcite	mineral	colourless,white,yellow,grey	vitreous	white	3-3	perfect	2.71-2.71	trigonal	Fizzes in cold dilute acid; breaks into rhombs.
dolomite	mineral	white,pink,grey	vitreous,pearly	white	3.5-4	perfect	2.84-2.86	trigonal	Fizzes in acid only when powdered; curved crystals.
gypsum	mineral	colourless,white,grey	vitreous,pearly,silky	white	2-2	perfect	2.31-2.33	monoclinic	Scratched by a fingernail; satin spar is silky.
halite	mineral	colourless,white,pink	vitreous	white	2-2.5	perfect	2.17-2.17	cubic	Tastes salty; three cleavages at right angles.
fluorite	mineral	purple,green,yellow,colourless,blue	vitreous	white	4-4	perfect	3.18-3.18	cubic	Cubes with octahedral cleavage; often fluoresces.
talc	mineral	white,green,grey	pearly,greasy	white	1-1	perfect	2.58-2.83	monoclinic	Soapy feel; the softest mineral of the Mohs scale.
corundum	mineral	grey,brown,blue,red	adamantine,vitreous	white	9-9	none	3.98-4.1	trigonal	Barrel-shaped crystals; ruby and sapphire.
diamond	mineral	colourless,yellow,brown	adamantine	white	10-10	perfect	3.5-3.53	cubic	The hardest natural substance; octahedral cleavage.
topaz	mineral	colourless,yellow,blue,pink	vitreous	white	8-8	perfect	3.49-3.57	orthorhombic	One perfect cleavage across its prisms.
apatite	mineral	green,blue,yellow,brown	vitreous	white	5-5	poor	3.16-3.22	hexagonal	Six-sided prisms; hardness 5 of the Mohs scale.
pyrite	mineral	brass-yellow	metallic	greenish-black	6-6.5	none	4.95-5.1	cubic	Fool's gold: striated cubes, harder and lighter than gold.
magnetite	mineral	black	metallic	black	5.5-6.5	none	5.17-5.18	cubic	Strongly magnetic; picks up a paper clip.
hematite	mineral	steel-grey,black,red-brown	metallic,submetallic,dull	red-brown	5.5-6.5	none	5.26-5.26	trigonal	Red-brown streak even when the specimen is black.
galena	mineral	lead-grey	metallic	lead-grey	2.5-2.75	perfect	7.4-7.6	cubic	Very heavy; breaks into little cubes.
chalcopyrite	mineral	brass-yellow	metallic	greenish-black	3.5-4	poor	4.1-4.3	tetragonal	Softer and more golden than pyrite; tarnishes iridescent.
sphalerite	mineral	brown,yellow,black,red	resinous,adamantine,submetallic	pale-brown	3.5-4	perfect	3.9-4.1	cubic	Resinous lustre and six directions of cleavage; zinc ore.
graphite	mineral	black,steel-grey	metallic,dull	black	1-2	perfect	2.09-2.23	hexagonal	Greasy feel; leaves a mark on paper.
copper	mineral	copper-red	metallic	copper-red	2.5-3	none	8.9-8.95	cubic	Native copper: malleable, tarnishes brown or green.
gold	mineral	gold-yellow	metallic	gold-yellow	2.5-3	none	15.5-19.3	cubic	Native gold: malleable, very heavy, golden streak.
silver	mineral	silver-white	metallic	silver-white	2.5-3	none	10.1-11.1	cubic	Native silver: malleable; tarnishes black.
bornite	mineral	copper-red,brown,purple,blue	metallic	dark-grey	3-3.25	poor	5.06-5.09	orthorhombic	Peacock ore: an iridescent purple and blue tarnish.
chalcocite	mineral	dark-grey,black	metallic	dark-grey	2.5-3	poor	5.5-5.8	monoclinic	Sectile dark grey copper ore.
cinnabar	mineral	red,red-brown	adamantine,dull	red	2-2.5	perfect	8.0-8.2	trigonal	Scarlet streak; the ore of mercury, very heavy.
stibnite	mineral	lead-grey	metallic	lead-grey	2-2	perfect	4.6-4.7	orthorhombic	Long striated blades that bend.
molybdenite	mineral	lead-grey	metallic	grey	1-1.5	perfect	4.62-4.73	hexagonal	Like graphite but heavier, with a bluish tint.
ilmenite	mineral	black	metallic,submetallic	black	5-6	none	4.68-4.76	trigonal	Black grains in sands; at most weakly magnetic.
chromite	mineral	black,brownish-black	metallic,submetallic	brown	5.5-5.5	none	4.5-5.09	cubic	Brown streak from a black mineral; chromium ore.
goethite	mineral	brown,yellow-brown,black	submetallic,adamantine,silky,dull	yellow-brown	5-5.5	perfect	3.3-4.3	orthorhombic	Yellow-brown streak; the main part of limonite.
malachite	mineral	green	silky,adamantine,dull	green	3.5-4	perfect	3.6-4.05	monoclinic	Banded green; fizzes in acid.
azurite	mineral	blue	vitreous,adamantine	blue	3.5-4	perfect	3.77-3.89	monoclinic	Deep blue, often grown with malachite.
barite	mineral	colourless,white,yellow,blue	vitreous,pearly	white	3-3.5	perfect	4.3-4.5	orthorhombic	Surprisingly heavy for a light-coloured mineral.
kaolinite	mineral	white	dull	white	2-2.5	perfect	2.6-2.63	triclinic	Soft white clay that sticks to a wet finger.
sulfur	mineral	yellow	resinous	white	1.5-2.5	poor	2.05-2.09	orthorhombic	Bright yellow; burns with a blue flame.
tourmaline	mineral	black,green,pink	vitreous	white	7-7.5	none	3.0-3.26	trigonal	Striated prisms with a rounded triangular section.
beryl	mineral	green,blue,yellow,colourless	vitreous	white	7.5-8	poor	2.63-2.92	hexagonal	Six-sided prisms; emerald and aquamarine.
zircon	mineral	brown,red-brown,yellow,colourless	adamantine,vitreous	white	7.5-7.5	poor	4.6-4.7	tetragonal	Square prisms with pyramid ends; heavy for a gem.
kyanite	mineral	blue,white,grey	vitreous,pearly	white	4.5-7	perfect	3.53-3.67	triclinic	Bladed: hardness 4.5 along the blade, 6.5 to 7 across it.
staurolite	mineral	brown,red-brown	vitreous,resinous	white	7-7.5	poor	3.65-3.83	monoclinic	Cross-shaped twins ("fairy crosses").
epidote	mineral	green,yellow,black	vitreous	white	6-7	perfect	3.38-3.49	monoclinic	Pistachio-green striated prisms.
rutile	mineral	red-brown,red,black	adamantine,submetallic	pale-brown	6-6.5	good	4.2-4.3	tetragonal	Needles; the golden hairs in rutilated quartz.
cassiterite	mineral	brown,black	adamantine,submetallic	white	6-7	poor	6.98-7.1	tetragonal	Tin ore; very heavy for a non-metallic mineral.
opal	mineral	white,colourless,blue,orange	vitreous,resinous	white	5.5-6.5	none	1.9-2.3	none	Amorphous silica; precious opal shows a play of colour.
anhydrite	mineral	white,blue,grey	vitreous,pearly	white	3.5-3.5	perfect	2.97-2.98	orthorhombic	Three cleavages near right angles; harder than gypsum.
chlorite	mineral	green,dark-green	vitreous,pearly	white	2-2.5	perfect	2.6-3.3	monoclinic	Green flakes that bend but do not spring back.
siderite	mineral	brown,yellow-brown	vitreous,pearly	white	3.5-4.5	perfect	3.9-3.96	trigonal	Heavy brown carbonate; fizzes in warm acid.
granite	rock	white,pink,grey	vitreous	white	6-7	none	2.6-2.7	none	Coarse interlocking quartz, feldspar and mica.
basalt	rock	black,dark-grey	dull	dark-grey	5.5-6.5	none	2.8-3.0	none	Fine-grained dark lava rock, often with gas holes.
gabbro	rock	black,dark-green,grey	vitreous	white	5.5-6.5	none	2.9-3.1	none	Coarse dark rock of pyroxene and plagioclase.
obsidian	rock	black	vitreous	white	5-5.5	none	2.35-2.6	none	Volcanic glass with conchoidal fracture.
pumice	rock	white,grey	dull	white	5.5-6	none	0.3-0.9	none	Frothy volcanic glass light enough to float.
sandstone	rock	pale-brown,red,yellow,white	dull	white	6-7	none	2.2-2.8	none	Cemented sand grains, gritty to the touch.
conglomerate	rock	grey,brown	dull	white	6-7	none	2.2-2.7	none	Rounded pebbles cemented together.
limestone	rock	grey,white	dull	white	3-4	none	2.5-2.75	none	Fizzes in acid; often holds fossils.
shale	rock	grey,black,red-brown	dull	grey	2.5-3	good	2.4-2.8	none	Splits into thin layers (fissility); smells of clay.
chert	rock	grey,black,brown,white	dull,greasy	white	7-7	none	2.5-2.65	none	Microcrystalline quartz; conchoidal fracture, sparks on steel.
coal	rock	black	dull	black	2-2.5	none	1.2-1.5	none	Light, black and combustible; dirties the fingers.
slate	rock	dark-grey,black,green,red	dull	grey	3-4	perfect	2.7-2.8	none	Splits into flat sheets along slaty cleavage.
schist	rock	silver-white,grey,green	pearly	white	3-5	good	2.7-3.0	none	Glittering parallel mica flakes (schistosity).
gneiss	rock	grey,pink,black	vitreous	white	6-7	none	2.6-2.9	none	Bands of light and dark minerals.
marble	rock	white,grey,pink	vitreous	white	3-4	none	2.6-2.8	none	Interlocking calcite crystals; fizzes in acid.
quartzite	rock	white,pink,grey	vitreous	white	7-7	none	2.6-2.7	none	Breaks through the grains, not around them.
"""
}
