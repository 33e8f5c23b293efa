// The board-game catalogue shipped with the product (docs/API.md `games`, `game.show`).
//
// Sources: BoardGameGeek (boardgamegeek.com), whose entries give the figures printed on the
// publishers' boxes: the year of first publication of the title named, the number of players,
// the playing time in minutes and the minimum age. Where a box gives one figure the range has
// one value ("45-45"). The descriptions are one line each, written by the MentorMate team, facts
// only (what the game is about and how it is played), no ratings. Only well-known games are in
// it, each as its base game without expansions: its facts are the ones most widely printed.
//
// Checked, every row (issue 18), against two exports of BoardGameGeek's data: its XML API as of
// 2017 (year, players, minplaytime-maxplaytime, minimum age; data/games.csv of
// github.com/AppliedDataSciencePartners/BGG_viz) and the 2021 BGG dataset (year, players, playing
// time, minimum age; bgg_dataset.csv, as in github.com/EricWang228/Board-Game-Helper). Where they
// differ the 2021 figure stands. Rows neither holds (Ark Nova, Heat) and lower playing times the
// 2021 export lacks were checked against pages quoting the box or BGG (Wikipedia, publishers,
// shops, reviews). Three rows whose references disagree keep their figure: Hive 2001 (BGG 2021:
// 2000), Flash Point: Fire Rescue 1-6 players (BGG 2021: 2-6), Photosynthesis age 8 (the box; BGG
// 2021: 10).
//
// Why compiled in (as the mineral catalogue, CatalogueData.swift): the catalogue is static, the
// same on every node (a meetup will name a game from it), and a text compiled into the binary
// cannot go missing or differ between installs. It is still kept as data — tab-separated text,
// one row per game — parsed and validated by `GameCatalogue.parse` (every node does so at
// start; the tests check every row).
//
// Columns (tab-separated): name (as published; unique once folded by `GameCatalogue.fold`),
// year, players "min-max", playing time in minutes "min-max", minimum age, description (at most
// 160 characters). Rows are in the order of their names; `games` sorts them anyway.

extension GameCatalogue {
    static let table = """
6 nimmt!	1994	2-10	45-45	8	All play a numbered card at once into four rows; the sixth card in a row takes the row and its penalty heads.
7 Wonders	2010	2-7	30-30	10	Draft cards over three ages, passing hands around the table, to build up a civilisation and its wonder.
7 Wonders Duel	2015	2-2	30-30	10	7 Wonders for two: cards taken from a shared layout, with military and scientific supremacy as instant wins.
A Feast for Odin	2016	1-4	30-120	12	Vikings hunt, raid, trade and emigrate, fitting goods tiles onto their boards like polyomino puzzles.
Acquire	1964	2-6	90-90	12	Lay tiles to found and merge hotel chains and buy their stock; the largest shareholders get bonuses at mergers.
Agricola	2007	1-5	30-150	12	Seventeenth-century farming by worker placement: plough, sow, raise animals, grow the family and feed it at harvests.
Alhambra	2003	2-6	45-60	8	Buy building tiles with four currencies to grow a palace; paying the exact price earns another turn.
Ark Nova	2021	1-4	90-150	14	Plan and build a modern zoo and support conservation projects, with five action cards whose strength changes with use.
Azul	2017	2-4	30-45	8	Draft coloured tiles from factory displays to fill the pattern lines of a palace wall; tiles left over cost points.
Battle Line	2000	2-2	30-30	12	Win flags by playing poker-like formations of three cards on your side of each of nine flags.
Betrayal at House on the Hill	2004	3-6	60-60	12	Explorers build a haunted house room by room until the haunt begins and one of them turns traitor.
Blood Rage	2015	2-4	60-90	14	Viking clans draft cards and fight over the provinces of Midgard for glory before Ragnarök.
Brass: Birmingham	2018	2-4	60-120	14	Build industries, canals and railways across the West Midlands over the canal and rail eras of the Industrial Revolution.
Camel Up	2014	2-8	20-30	8	Bet on a camel race in which camels that land on others stack up and ride along.
Carcassonne	2000	2-5	30-45	7	Lay landscape tiles to build a medieval map and place followers on its cities, roads, monasteries and fields.
Cartographers	2019	1-100	30-45	10	Draw terrain shapes onto your own map sheet to meet the edicts scored each season.
Cascadia	2021	1-4	30-45	10	Draft pairs of habitat tiles and wildlife tokens to build a landscape of the Pacific Northwest.
Catan	1995	3-4	60-120	10	Settlers trade resources and build roads, settlements and cities on an island of hexagonal tiles; ten points win.
Caverna: The Cave Farmers	2013	1-7	30-210	12	Dwarf families furnish caves, mine ore and rubies, farm and send expeditions: Agricola underground.
Caylus	2005	2-5	60-150	12	Master builders place workers along a road to gather resources and build a castle; the provost can cut the road short.
Century: Spice Road	2017	2-5	30-45	8	Caravan traders use merchant cards to collect and upgrade spices and fulfil point cards.
Codenames	2015	2-8	15-15	14	Two teams; spymasters give one-word clues so their teammates pick their agents out of a grid of 25 words.
Coloretto	2003	2-5	30-30	8	Take rows of chameleon cards to collect three colours; colours beyond three count against you.
Concordia	2013	2-5	100-100	13	Roman trading families spread across the Mediterranean; the cards you buy are both your actions and your final scoring.
Connect Four	1974	2-2	10-10	6	Drop discs into an upright grid to be first with four in a row.
Diplomacy	1959	2-7	360-360	12	The great powers of Europe before 1914: no dice, orders written in secret, alliances made and broken by negotiation.
Dixit	2008	3-6	30-30	8	The storyteller gives a clue for an illustrated card; the others guess it among decoys from their own hands.
Dominion	2008	2-4	30-30	13	The first deck-building game: buy cards from a shared supply to improve your deck and gain provinces.
Dune: Imperium	2020	1-4	60-120	14	Deck-building and worker placement on Arrakis, with conflicts and alliances with four factions.
El Grande	1995	2-5	60-120	12	Grandees of medieval Spain place caballeros in its regions and score majorities, with power cards and the castillo.
Eldritch Horror	2013	1-8	120-240	14	Cooperative investigators travel the world to solve mysteries before an Ancient One awakens.
Everdell	2018	1-4	40-80	13	Woodland critters build a city of cards beneath a great tree over four seasons.
Exploding Kittens	2015	2-5	15-15	7	Draw cards until someone draws an exploding kitten; play the others to dodge it.
Flash Point: Fire Rescue	2011	1-6	45-45	10	Cooperative firefighters rescue victims from a burning building before it collapses.
Forbidden Desert	2013	2-5	45-45	10	Cooperative: find the parts of a legendary flying machine in a desert shifting under a sandstorm.
Forbidden Island	2010	2-4	30-30	10	Cooperative: adventurers recover four treasures from a sinking island and escape by helicopter.
Galaxy Trucker	2007	2-4	60-60	10	Race to build a spaceship from component tiles, then fly it through meteors, pirates and smugglers.
Gloomhaven	2017	1-4	60-120	14	A cooperative campaign of tactical dungeon scenarios, fought with hands of ability cards instead of dice.
Great Western Trail	2016	2-4	75-150	12	Ranchers drive cattle from Texas to Kansas City to ship them by rail, improving the herd on the way.
Hanabi	2010	2-5	25-25	8	Cooperative fireworks: you hold your cards facing out and play them in order from the others' limited clues.
Hanamikoji	2013	2-2	15-15	10	Two players seek the favour of seven geishas by offering them gifts through four actions each round.
Hansa Teutonica	2009	2-5	45-90	12	Hanseatic merchants claim trading posts along routes between cities and improve their own abilities.
Heat: Pedal to the Metal	2022	1-6	30-60	10	Race cars around circuits with cards, managing speed, gears and the heat of braking into corners.
Hive	2001	2-2	20-20	9	An abstract game of insect tiles with no board: surround the opposing queen bee.
Imhotep	2016	2-4	40-40	10	Load stones onto boats bound for the monuments of Egypt; where each boat lands decides who scores.
Istanbul	2014	2-5	40-60	10	A merchant and assistants move through the sixteen places of a bazaar collecting goods and rubies.
Jaipur	2009	2-2	30-30	12	Two traders of Rajasthan collect and sell goods cards and camels to win the Maharaja's favour.
Just One	2018	3-7	20-20	8	Cooperative word game: each writes a one-word clue for the guesser; identical clues are struck out.
King of Tokyo	2011	2-6	30-30	8	Giant monsters roll dice to attack, heal and gain energy, and fight over who holds Tokyo.
Kingdom Builder	2011	2-4	45-45	8	Place settlements on the terrain of your drawn card across a board of four sections, scored by three goal cards.
Kingdomino	2016	2-4	15-15	8	Draft domino tiles of terrain to build a five-by-five kingdom; the tile you take sets your next pick.
Las Vegas	2012	2-5	30-30	8	Roll dice and place them on six casinos to win banknotes by majority; tied dice cancel out.
Le Havre	2008	1-5	30-150	12	Develop a harbour town: gather and process goods, build buildings and ships, and feed your workers.
Lords of Waterdeep	2012	2-5	60-120	12	Lords of a fantasy city send agents to hire adventurers and complete quests for points.
Lost Cities	1999	2-2	30-30	10	Two explorers play cards in rising order on expeditions that lose points unless they get far enough.
Lost Ruins of Arnak	2020	1-4	30-120	12	Explore an island by deck-building and worker placement to uncover a lost civilisation.
Love Letter	2012	2-4	20-20	10	Deduction with sixteen cards: hold one, play one, and be the last suitor standing.
Mage Knight Board Game	2011	1-4	60-240	14	Deck-building adventure and conquest across a map of tiles revealed as you explore.
Modern Art	1992	3-5	45-45	10	Art dealers auction paintings by five artists in five kinds of auction; the market sets their value.
Monopoly	1933	2-8	60-180	8	Buy property, build houses and hotels and collect rent until the other players go bankrupt.
Mr. Jack	2006	2-2	30-30	9	One player is Jack the Ripper hiding among the characters in Whitechapel; the other, the detective hunting him.
Mysterium	2015	2-7	42-42	10	A silent ghost sends psychics dream-like illustrated cards as clues to the who, where and how of a murder.
No Thanks!	2004	3-7	20-20	8	Take a numbered card with its chips, or pay a chip to refuse it; a run of cards counts only its lowest.
One Night Ultimate Werewolf	2014	3-10	10-10	8	Hidden roles in a single night: some roles act once in the dark, then everyone has one vote to find a werewolf.
Orléans	2014	2-4	90-90	12	Draw followers from your bag to take actions in medieval France; the bag grows as you recruit.
Pandemic	2008	2-4	45-45	8	Cooperative: a team of specialists travels the world treating outbreaks and researching cures for four diseases.
Pandemic Legacy: Season 1	2015	2-4	60-60	13	Pandemic as a year-long campaign in which the board and the rules change permanently from game to game.
Patchwork	2014	2-2	15-30	8	Two players spend buttons and time on fabric pieces to fill their quilt boards.
Photosynthesis	2017	2-4	30-60	8	Grow trees in a forest as the sun moves around the board, shading your neighbours' trees.
Power Grid	2004	2-6	120-120	12	Buy power plants at auction and fuel on a market, and connect cities to your network across the map.
Puerto Rico	2002	3-5	90-150	12	Colonial governors choose roles each round to grow, process and ship goods and build up San Juan.
Qwirkle	2006	2-4	45-45	6	Lay wooden tiles in lines sharing a colour or a shape; a line of all six is a Qwirkle.
Ra	1999	2-5	45-60	12	Bid sun disks on lots of Egyptian tiles over three epochs; drawing Ra tiles brings each epoch to its end.
Race for the Galaxy	2007	2-4	30-60	12	Choose roles at the same time to explore, develop and settle worlds in a galaxy of cards.
Risk	1959	2-6	120-120	10	World conquest with armies and dice across forty-two territories.
Root	2018	2-4	60-90	10	An asymmetric woodland war among the Marquise de Cat, the Eyrie Dynasties, the Woodland Alliance and the Vagabond.
San Juan	2004	2-4	45-60	10	The card game of Puerto Rico: each card is a building, a good or money.
Scrabble	1948	2-4	90-90	10	Form crossword-style words from letter tiles on a 15-by-15 board with premium squares.
Scythe	2016	1-5	90-115	14	An alternate-history 1920s Europe of farms and mechs: produce, build, expand and score on a hexagonal map.
Small World	2009	2-5	40-80	8	Combinations of fantasy races and powers conquer a map too small for all of them, then go into decline.
Spirit Island	2017	1-4	90-120	13	Cooperative: spirits of an island grow their powers and, with the Dahan, drive off colonising invaders.
Splendor	2014	2-4	30-30	10	Renaissance gem merchants collect tokens to buy development cards that give lasting discounts and attract nobles.
Star Realms	2014	2-2	20-20	12	A deck-building card game of space combat for two.
Star Wars: Rebellion	2016	2-4	180-240	14	The Galactic Civil War: the Empire hunts for the hidden Rebel base while the Rebellion gains support.
Stone Age	2008	2-4	60-90	10	Worker placement in the Stone Age: gather food and resources with dice, build huts and advance the tribe.
Stratego	1946	2-2	45-45	8	Two armies whose ranks are hidden from the opponent; capture the other side's flag.
Sushi Go!	2013	2-5	15-15	8	Pick one card and pass the rest to collect the best sets of sushi dishes over three rounds.
Takenoko	2011	2-4	45-45	8	Tend a bamboo garden at the Japanese emperor's court while his panda eats it.
Targi	2012	2-2	60-60	12	Two Tuareg tribes place figures on the border cards and take the cards where their rows and columns cross.
Telestrations	2009	4-8	30-30	12	Draw a word, guess the drawing, draw the guess: the telephone game in sketchbooks.
Terra Mystica	2012	2-5	60-150	12	Fourteen fantasy factions terraform a map into their home landscape and build on it.
Terraforming Mars	2016	1-5	120-120	12	Corporations raise the temperature, oxygen and oceans of Mars with project cards, generation after generation.
The Castles of Burgundy	2011	2-4	30-90	12	Princes of the Loire valley use dice to choose hexagonal tiles and place them on their estates.
The Crew: The Quest for Planet Nine	2019	2-5	20-20	10	A cooperative trick-taking game of fifty missions played with little communication.
The Fox in the Forest	2017	2-2	30-30	10	A trick-taking card game for two with fairy-tale cards that bend the rules.
The Mind	2018	2-4	15-15	8	Play numbered cards together in rising order without saying a word.
The Quacks of Quedlinburg	2018	2-4	45-45	10	Quack doctors draw ingredients from a bag into a cauldron, pushing their luck before it boils over.
The Resistance	2009	5-10	30-30	13	Hidden spies sabotage the resistance's missions; the players debate and vote on who goes.
The Resistance: Avalon	2012	5-10	30-30	13	The Resistance in Arthurian dress, with Merlin, who knows the evil players, and an assassin hunting him.
Through the Ages: A New Story of Civilization	2015	2-4	120-120	14	Lead a civilisation from antiquity to the modern age with leaders, wonders and technologies, all on cards.
Ticket to Ride	2004	2-5	30-60	8	Collect coloured train cards to claim railway routes between North American cities and complete destination tickets.
Ticket to Ride: Europe	2005	2-5	30-60	8	Ticket to Ride on a map of Europe, with tunnels, ferries and train stations.
Tigris & Euphrates	1997	2-4	90-90	12	Tile laying in ancient Mesopotamia with four kinds of leaders; your score is your weakest colour.
Tokaido	2012	2-5	45-45	8	Travellers walk the East Sea Road from Kyoto to Edo; whoever is last on the road moves next.
Tsuro	2004	2-8	15-20	8	Lay path tiles to lead your stone along, and be the last one left on the board.
Twilight Imperium: Fourth Edition	2017	3-6	240-480	14	Galactic civilisations compete by exploration, trade, politics and war for the throne of Mecatol Rex.
Twilight Struggle	2005	2-2	120-180	13	The Cold War for two, from 1945 to 1989: card-driven struggle for influence across the world's regions.
Tzolk'in: The Mayan Calendar	2012	2-4	90-90	13	Workers ride turning gears that carry them to better actions the longer they stay on.
Viticulture Essential Edition	2015	1-6	45-90	13	Tuscan vineyard owners plant vines, make wine and fill orders through the seasons of each year.
Welcome To...	2018	1-100	25-25	10	A flip-and-write game: number the houses of three streets in a 1950s American suburb.
Wingspan	2019	1-5	40-70	10	Bird enthusiasts attract birds to three habitats of their wildlife preserves in an engine-building card game.
"""
}
