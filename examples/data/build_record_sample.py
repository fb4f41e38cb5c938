# Copyright 2026 The gesa authors. All rights reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Build the embedded ReCoRD-format sample (``record_sample_train.jsonl``, ``record_sample_dev.jsonl``).

The passages, highlights and queries below were written for the gesa project (invented news stories; no text
is taken from ReCoRD, CNN or the Daily Mail). Entity mentions are marked ``[[like this]]`` in the source; the
builder strips the marks and computes the character spans, so every span is right by construction and is
checked again by ``tests/test_sample_data.py``.

Output rows follow the SuperGLUE ReCoRD jsonl shape::

    {"idx": 0, "source": ..., "passage": {"text": ..., "entities": [{"start": s, "end": e}, ...]},
     "qas": [{"idx": 0, "id": ..., "query": "... @placeholder ...",
              "answers": [{"start": s, "end": e, "text": ...}, ...]}]}

with **inclusive** ``end`` offsets (``text[start:end + 1]`` is the mention). Every mention of the answer string is
listed as an answer span, as in ReCoRD. Run ``python examples/data/build_record_sample.py`` to regenerate.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = "gesa sample (written for the project)"
_MENTION = re.compile(r"\[\[(.+?)\]\]")

# (passage with [[mentions]] and @highlight lines, [(query with @placeholder, answer string), ...])
TRAIN: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "A lighthouse keeper in [[Cornwall]] has rescued three kayakers who were swept out to sea during a sudden "
        "storm on Sunday afternoon. [[Tobias Wren]], 58, spotted the group from the tower of the [[Pendrick Point]] "
        "lighthouse and launched his own dinghy after radio calls to the coastguard went unanswered. The kayakers, "
        "students from [[Exeter]], were treated for mild hypothermia at [[Truro]] hospital. [[Wren]] said he had "
        "kept a boat ready for twenty years and had never needed it until now.\n"
        "@highlight\n[[Tobias Wren]] launched his dinghy when the coastguard did not answer\n"
        "@highlight\nThree students from [[Exeter]] were swept out to sea off [[Cornwall]]\n"
        "@highlight\nThey were treated for mild hypothermia in [[Truro]]",
        [
            ("Lighthouse keeper @placeholder said he had kept a boat ready for two decades", "Tobias Wren"),
            ("The rescued kayakers were all students from @placeholder", "Exeter"),
            ("Hospital staff in @placeholder treated the group for mild hypothermia", "Truro"),
        ],
    ),
    (
        "[[Lunaris Robotics]], a start-up based in [[Lyon]], has opened what it calls the first bakery run entirely "
        "by machines. The shop on [[Rue Verdier]] bakes four hundred croissants a morning using two robotic arms "
        "designed by engineer [[Camille Aubert]]. Customers order on a screen and collect their pastries from a "
        "heated locker. The company says it hopes to open a second shop in [[Geneva]] next spring, although the "
        "local bakers' union in [[Lyon]] has criticised the project.\n"
        "@highlight\n[[Lunaris Robotics]] opened a bakery run by robotic arms in [[Lyon]]\n"
        "@highlight\nThe machines were designed by engineer [[Camille Aubert]]\n"
        "@highlight\nA second shop is planned for [[Geneva]] next spring",
        [
            ("Engineer @placeholder designed the two robotic arms that bake the croissants", "Camille Aubert"),
            ("The start-up plans to expand to @placeholder after its first shop", "Geneva"),
            ("Bakers in @placeholder have criticised the machine-run shop", "Lyon"),
        ],
    ),
    (
        "[[Riverside United]] came from two goals down to beat [[Castlegate Rovers]] 3-2 in a dramatic cup tie on "
        "Saturday. [[Castlegate]] led through goals from [[Danny Okafor]] and [[Luis Prieto]] before the break. "
        "After half-time, [[Riverside]] captain [[Sam Holloway]] scored twice and substitute [[Kieran Bell]] headed "
        "the winner in stoppage time. Manager [[Ruth Adeyemi]] called it the best comeback of her career.\n"
        "@highlight\n[[Riverside United]] beat [[Castlegate Rovers]] 3-2 after trailing 2-0\n"
        "@highlight\n[[Sam Holloway]] scored twice in the second half\n"
        "@highlight\nSubstitute [[Kieran Bell]] headed the winner in stoppage time",
        [
            ("@placeholder came off the bench to score the decisive goal", "Kieran Bell"),
            ("Two goals from captain @placeholder brought the home side level", "Sam Holloway"),
            ("Manager @placeholder described the win as the greatest comeback she had seen", "Ruth Adeyemi"),
        ],
    ),
    (
        "Astronomers at the [[Kessler Observatory]] in [[Chile]] have spotted a comet that will pass close enough "
        "to [[Earth]] to be seen without a telescope next winter. The comet, named [[C/2031 Varga]] after its "
        "discoverer [[Ilona Varga]], is thought to come from the distant [[Oort Cloud]]. [[Varga]], a doctoral "
        "student, found the faint object while checking images for asteroids.\n"
        "@highlight\nThe comet was found by doctoral student [[Ilona Varga]] at the [[Kessler Observatory]]\n"
        "@highlight\nIt will be visible from [[Earth]] with the naked eye next winter\n"
        "@highlight\nScientists believe it began its journey in the [[Oort Cloud]]",
        [
            ("The faint object was found by @placeholder while she searched for asteroids", "Ilona Varga"),
            ("Researchers say the comet travelled from the @placeholder", "Oort Cloud"),
            ("The discovery was made by astronomers working in @placeholder", "Chile"),
        ],
    ),
    (
        "Councillors in [[Millbrook]] have voted to rebuild the [[Old Mill Bridge]], which was closed last year "
        "after engineers found cracks in its arches. The new crossing will cost £4 million, with half paid by the "
        "[[Department for Transport]]. Council leader [[Priya Nair]] said the closure had split the town in two, "
        "forcing residents of [[Eastfield]] to make a six-mile detour. Work is due to begin in March and finish "
        "before the [[Millbrook Regatta]] in the summer of 2027.\n"
        "@highlight\nThe [[Old Mill Bridge]] was closed after cracks were found in its arches\n"
        "@highlight\nThe [[Department for Transport]] will pay half of the £4 million cost\n"
        "@highlight\nResidents of [[Eastfield]] have faced a six-mile detour",
        [
            ("Leader @placeholder said the town had been cut in half by the closure", "Priya Nair"),
            ("People living in @placeholder have had to drive six miles to reach the town centre", "Eastfield"),
            ("The rebuilt crossing should open before the @placeholder", "Millbrook Regatta"),
        ],
    ),
    (
        "A tortoise that vanished from a garden in [[Surrey]] more than thirty years ago has been found living two "
        "streets away. [[Dudley]], who is believed to be around 90 years old, disappeared in 1994 from the home of "
        "[[Margaret Pike]]. Neighbour [[Aaron Fisk]] found him eating strawberries in his vegetable patch and "
        "recognised a name painted on his shell. [[Pike]], now 84, said she cried when she saw him again. Vets from "
        "the [[Guildford Animal Clinic]] said [[Dudley]] was in remarkable health.\n"
        "@highlight\n[[Dudley]] the tortoise went missing from a [[Surrey]] garden in 1994\n"
        "@highlight\nHe was found by neighbour [[Aaron Fisk]] among the strawberries\n"
        "@highlight\nOwner [[Margaret Pike]], 84, was reunited with her pet",
        [
            ("@placeholder spotted the missing pet eating fruit in his vegetable patch", "Aaron Fisk"),
            (
                "The tortoise was checked by vets from the @placeholder who found him healthy",
                "Guildford Animal Clinic",
            ),
            ("@placeholder is believed to be about 90 years old", "Dudley"),
        ],
    ),
    (
        "Heavy rain has caused the [[River Alden]] to burst its banks, flooding more than two hundred homes in the "
        "market town of [[Wexley]]. The [[Environment Agency]] issued a severe flood warning overnight and "
        "residents were moved to a leisure centre. Mayor [[Colin Barrett]] praised volunteers from the "
        "[[Wexley Rowing Club]], who used their boats to carry elderly people to safety. Forecasters at the "
        "[[Met Office]] expect more rain on Thursday.\n"
        "@highlight\nMore than two hundred homes flooded in [[Wexley]]\n"
        "@highlight\nVolunteers from the [[Wexley Rowing Club]] ferried elderly residents to safety\n"
        "@highlight\nThe [[Met Office]] warns of more rain later in the week",
        [
            ("Rowers from the @placeholder used their boats to rescue older residents", "Wexley Rowing Club"),
            ("Overnight the @placeholder put a severe warning in place", "Environment Agency"),
            ("The flooding began when the @placeholder overflowed after days of rain", "River Alden"),
        ],
    ),
    (
        "Pianist [[Yuki Tanabe]] has become the youngest winner of the [[Halvorsen Piano Competition]], beating "
        "eleven finalists in [[Oslo]] on Friday night. The 17-year-old from [[Osaka]] played a concerto by "
        "[[Sergei Rachmaninoff]] with the [[Oslo Philharmonic]]. Her teacher, [[Hana Mori]], said she practised for "
        "six hours every day. The prize includes a recording contract and a tour of [[Scandinavia]].\n"
        "@highlight\n[[Yuki Tanabe]], 17, won the [[Halvorsen Piano Competition]]\n"
        "@highlight\nShe performed a [[Sergei Rachmaninoff]] concerto in the final\n"
        "@highlight\nThe prize includes a tour of [[Scandinavia]]",
        [
            ("Teacher @placeholder said her pupil practised six hours a day", "Hana Mori"),
            ("The teenager, who grew up in @placeholder, beat eleven other finalists", "Osaka"),
            ("The winner will now tour @placeholder and record an album", "Scandinavia"),
        ],
    ),
    (
        "The low-cost airline [[SkyBridge]] has cancelled forty flights from [[Dublin Airport]] after a software "
        "fault grounded its booking system. Passengers bound for [[Lisbon]], [[Malaga]] and [[Krakow]] were told to "
        "rebook online. Chief executive [[Fergal Quinn]] apologised and promised refunds within seven days. The "
        "[[Irish Aviation Authority]] said it would ask for a full report.\n"
        "@highlight\n[[SkyBridge]] cancelled forty flights from [[Dublin Airport]]\n"
        "@highlight\nChief executive [[Fergal Quinn]] promised refunds within a week\n"
        "@highlight\nThe [[Irish Aviation Authority]] has asked for a report",
        [
            ("Boss @placeholder said sorry to stranded passengers", "Fergal Quinn"),
            ("Regulators at the @placeholder want to know what went wrong", "Irish Aviation Authority"),
            ("A computer glitch forced @placeholder to ground dozens of flights", "SkyBridge"),
        ],
    ),
    (
        "Kenyan runner [[Grace Wanjiru]] broke the course record at the [[Harbour City Marathon]] on Sunday, "
        "finishing in two hours and nineteen minutes. She pulled away from the defending champion, "
        "[[Almaz Tesfaye]] of [[Ethiopia]], on the climb past [[Victoria Park]]. The men's race was won by "
        "[[Tomás Ferreira]] of [[Portugal]] in a sprint finish. Organisers said a record 31,000 runners took part.\n"
        "@highlight\n[[Grace Wanjiru]] set a course record of 2:19\n"
        "@highlight\nDefending champion [[Almaz Tesfaye]] finished second\n"
        "@highlight\n[[Tomás Ferreira]] won the men's race in a sprint",
        [
            ("@placeholder took the men's title after a sprint to the line", "Tomás Ferreira"),
            ("The winner broke clear on the hill beside @placeholder", "Victoria Park"),
            ("Last year's champion, from @placeholder, had to settle for second place", "Ethiopia"),
        ],
    ),
    (
        "A new children's ward has opened at [[St Aldhelm's Hospital]] in [[Bristol]], funded by a charity set up by "
        "the parents of a former patient. The [[Little Lanterns Trust]] was founded by [[Owen Price]] and "
        "[[Leah Price]] after their son spent five months in hospital. The ward has twenty beds, a playroom and "
        "rooms where parents can stay overnight. Health minister [[Rachel Dunmore]] cut the ribbon on Monday.\n"
        "@highlight\nThe ward at [[St Aldhelm's Hospital]] has twenty beds and a playroom\n"
        "@highlight\nIt was funded by the [[Little Lanterns Trust]]\n"
        "@highlight\nMinister [[Rachel Dunmore]] opened the ward on Monday",
        [
            ("The charity was set up by @placeholder and his wife after their son's long stay", "Owen Price"),
            ("Minister @placeholder performed the opening ceremony", "Rachel Dunmore"),
            ("The children's ward in @placeholder includes rooms for parents", "Bristol"),
        ],
    ),
    (
        "Police in [[Antwerp]] have recovered a painting stolen from the [[Marlow Gallery]] in [[London]] fifteen "
        "years ago. The small oil portrait by [[Pieter de Vries]] was found in a garage during an unrelated raid. "
        "Detectives from the [[Metropolitan Police]] will travel to [[Belgium]] to identify it. Gallery director "
        "[[Judith Kemp]] said staff had never given up hope.\n"
        "@highlight\nThe portrait by [[Pieter de Vries]] vanished from the [[Marlow Gallery]]\n"
        "@highlight\nIt was found in a garage in [[Antwerp]]\n"
        "@highlight\n[[Metropolitan Police]] officers will travel to [[Belgium]]",
        [
            ("Director @placeholder said the gallery never stopped hoping for its return", "Judith Kemp"),
            ("The missing work was painted by @placeholder", "Pieter de Vries"),
            ("Officers searching a garage in @placeholder found the portrait by chance", "Antwerp"),
        ],
    ),
    (
        "Pupils at [[Hillcrest Primary School]] in [[Leeds]] have built a weather station that sends readings to "
        "the [[Met Office]] every hour. The project was led by science teacher [[Nadia Hussain]], who won a grant "
        "from the [[Royal Meteorological Society]]. Ten-year-old [[Ben Carter]] said his favourite part was "
        "checking the rain gauge. The school hopes to share its data with schools in [[Kenya]].\n"
        "@highlight\n[[Hillcrest Primary School]] pupils built their own weather station\n"
        "@highlight\nTeacher [[Nadia Hussain]] won a grant for the project\n"
        "@highlight\nReadings go to the [[Met Office]] every hour",
        [
            ("The grant came from the @placeholder", "Royal Meteorological Society"),
            ("@placeholder, ten, enjoys checking the rain gauge most", "Ben Carter"),
            ("The pupils want to swap data with classrooms in @placeholder", "Kenya"),
        ],
    ),
    (
        "A satellite built by students at the [[University of Tartu]] has been launched from [[French Guiana]] "
        "aboard a [[Vega]] rocket. The shoebox-sized craft, called [[Kotkas-2]], will test a new way of measuring "
        "air pollution over [[Estonia]]. Project leader [[Mart Kask]] said the team had spent four years on it. The "
        "[[European Space Agency]] paid for the launch.\n"
        "@highlight\nStudents at the [[University of Tartu]] built [[Kotkas-2]]\n"
        "@highlight\nIt lifted off on a [[Vega]] rocket from [[French Guiana]]\n"
        "@highlight\nThe [[European Space Agency]] paid for the launch",
        [
            ("The satellite will measure pollution in the skies above @placeholder", "Estonia"),
            ("@placeholder said his team had worked on the craft for four years", "Mart Kask"),
            ("The craft flew into orbit on a @placeholder rocket", "Vega"),
        ],
    ),
]

DEV: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Rescuers have praised a hiker who kept four strangers alive for two nights after they were trapped by "
        "snow on [[Mount Halden]] in the [[Cairngorms]]. [[Fiona Reid]], 34, a nurse from [[Aberdeen]], was walking "
        "alone when she found the group sheltering behind a rock on the northern ridge. Two of them, brothers "
        "[[Jamie Lowe]] and [[Connor Lowe]], had injured their ankles. [[Reid]] built a wall of snow around them, "
        "shared her food and took turns keeping watch. On the second morning a helicopter from the [[Coastguard]] "
        "base at [[Inverness]] spotted the orange survival bag she had spread on the snow. "
        "[[Braemar Mountain Rescue Team]] leader [[Alasdair Grant]] said she had saved their lives. The group were "
        "flown to [[Raigmore Hospital]], where they were treated for frostbite. [[Fiona Reid]] said she had only "
        "done what anyone would do, and that she planned to return to [[Mount Halden]] in the spring.\n"
        "@highlight\nNurse [[Fiona Reid]] found four trapped walkers on [[Mount Halden]]\n"
        "@highlight\nBrothers [[Jamie Lowe]] and [[Connor Lowe]] had injured their ankles\n"
        "@highlight\nA [[Coastguard]] helicopter from [[Inverness]] spotted her survival bag\n"
        "@highlight\nThe walkers were treated for frostbite at [[Raigmore Hospital]]",
        [
            ("@placeholder built a snow wall and shared her food with the stranded group", "Fiona Reid"),
            ("Team leader @placeholder said the nurse had saved four lives", "Alasdair Grant"),
            ("The helicopter crew flew the walkers to @placeholder", "Raigmore Hospital"),
        ],
    ),
    (
        "A family-run ice cream parlour in [[Whitby]] has been named the best in [[Britain]] at the "
        "[[National Dairy Awards]]. [[Gelato Rossi]] was opened in 1962 by [[Enzo Rossi]], who arrived from "
        "[[Naples]] with a single recipe for pistachio ice cream. His granddaughter [[Sofia Rossi]] now runs the "
        "business and still uses the same recipe. Judges praised its sea salt caramel flavour.\n"
        "@highlight\n[[Gelato Rossi]] in [[Whitby]] won the top prize at the [[National Dairy Awards]]\n"
        "@highlight\nThe parlour was founded in 1962 by [[Enzo Rossi]]\n"
        "@highlight\nGranddaughter [[Sofia Rossi]] still uses his pistachio recipe",
        [
            ("The founder brought his recipe from @placeholder in the early 1960s", "Naples"),
            ("@placeholder, who now runs the parlour, has kept the original recipe", "Sofia Rossi"),
            ("The seaside town of @placeholder is home to the prize-winning shop", "Whitby"),
        ],
    ),
    (
        "A new tram line linking [[Kelvin Park]] with the city centre of [[Norbridge]] opened on Tuesday, two years "
        "late and £30 million over budget. The line, run by [[Metrolink North]], has nine stops and trams every six "
        "minutes. Transport committee chair [[Deborah Osei]] admitted the delays had been frustrating but said the "
        "line would take three thousand cars off the road each day. The first passenger was 92-year-old "
        "[[Arthur Bloom]], who rode the city's last tram in 1958.\n"
        "@highlight\nThe [[Kelvin Park]] line opened two years late and £30 million over budget\n"
        "@highlight\nTrams run every six minutes on the nine-stop route\n"
        "@highlight\n[[Arthur Bloom]], 92, rode the city's last tram in 1958",
        [
            ("@placeholder was the first passenger on the new line", "Arthur Bloom"),
            ("The route is operated by @placeholder", "Metrolink North"),
            ("Committee chair @placeholder said the trams would cut traffic", "Deborah Osei"),
        ],
    ),
    (
        "Conservationists say the rare [[Azure Moth]] has returned to the [[Ferngill Valley]] for the first time in "
        "half a century, after a project to restore the wet meadows where it breeds. The insect was last recorded "
        "there in 1974 by the naturalist [[Edith Crane]], whose notebooks are kept at the [[Natural History Museum]]. "
        "Volunteers from the [[Ferngill Trust]] spent six years clearing drainage ditches and replanting marsh "
        "violets, the only plant the caterpillars eat. Ecologist [[Dr Rahul Mehta]] counted forty adult moths "
        "during a survey in July. He said the result showed that small, patient projects could bring species back. "
        "The trust now hopes to reintroduce the [[Marsh Fritillary]] butterfly, which vanished from the valley in "
        "the 1980s. Farmers around [[Ferngill]] have agreed to leave strips of meadow uncut until September.\n"
        "@highlight\nThe [[Azure Moth]] was last seen in the [[Ferngill Valley]] in 1974\n"
        "@highlight\nVolunteers replanted marsh violets, the caterpillars' only food\n"
        "@highlight\n[[Dr Rahul Mehta]] counted forty adults in July\n"
        "@highlight\nThe [[Ferngill Trust]] now wants to bring back the [[Marsh Fritillary]]",
        [
            ("The moth was last recorded by @placeholder half a century ago", "Edith Crane"),
            ("Volunteers from the @placeholder spent six years restoring meadows", "Ferngill Trust"),
            ("Next the conservationists hope to reintroduce the @placeholder", "Marsh Fritillary"),
        ],
    ),
    (
        "The video game studio [[Pebblestone Games]], based in [[Tampere]], has sold one million copies of its "
        "puzzle game [[Lanternfall]] in its first month. The game was made by a team of nine led by designer "
        "[[Aino Virtanen]]. It follows a lighthouse keeper who must guide ships home through a storm. Publisher "
        "[[Northwind Interactive]] said it would release a version for phones later this year.\n"
        "@highlight\n[[Lanternfall]] sold one million copies in a month\n"
        "@highlight\nDesigner [[Aino Virtanen]] led a team of nine in [[Tampere]]\n"
        "@highlight\n[[Northwind Interactive]] plans a phone version",
        [
            ("@placeholder will bring the game to mobile phones", "Northwind Interactive"),
            ("The puzzle game was designed by a nine-person team under @placeholder", "Aino Virtanen"),
        ],
    ),
    (
        "[[Marco Bellini]] won the fourth stage of the [[Tour of the Alps]] on Wednesday after a solo attack on the "
        "final climb to [[Passo Rolle]]. The 26-year-old from [[Bergamo]] crossed the line forty seconds ahead of "
        "[[Jonas Eriksen]] of [[Denmark]], who keeps the leader's jersey. [[Bellini]]'s team, [[Verdana Cycling]], "
        "had not won a stage in three years.\n"
        "@highlight\n[[Marco Bellini]] attacked alone on the climb to [[Passo Rolle]]\n"
        "@highlight\n[[Jonas Eriksen]] finished second and keeps the overall lead\n"
        "@highlight\nIt was the first stage win for [[Verdana Cycling]] in three years",
        [
            ("Danish rider @placeholder still wears the leader's jersey", "Jonas Eriksen"),
            ("The winning attack came on the road up to @placeholder", "Passo Rolle"),
        ],
    ),
]


def parse_marked(marked: str) -> tuple[str, list[dict[str, int]], list[str]]:
    """Strip ``[[...]]`` marks: the clean text, inclusive-end entity spans and the mention strings."""
    pieces: list[str] = []
    entities: list[dict[str, int]] = []
    mentions: list[str] = []
    cursor = 0
    length = 0
    for match in _MENTION.finditer(marked):
        before = marked[cursor : match.start()]
        pieces.append(before)
        length += len(before)
        mention = match.group(1)
        entities.append({"start": length, "end": length + len(mention) - 1})
        mentions.append(mention)
        pieces.append(mention)
        length += len(mention)
        cursor = match.end()
    pieces.append(marked[cursor:])
    text = "".join(pieces)
    if "[[" in text or "]]" in text:
        raise ValueError(f"unbalanced mention marks in: {marked[:60]!r}")
    return text, entities, mentions


def build_rows(split: str, items: list[tuple[str, list[tuple[str, str]]]]) -> list[dict]:
    """SuperGLUE-shaped rows for one split; query ids are ``gesa-sample-{split}-{passage}-{query}``."""
    rows = []
    for p_idx, (marked, queries) in enumerate(items):
        text, entities, mentions = parse_marked(marked)
        qas = []
        for q_idx, (query, answer) in enumerate(queries):
            if query.count("@placeholder") != 1:
                raise ValueError(f"query must hold @placeholder exactly once: {query!r}")
            spans = [dict(span, text=m) for span, m in zip(entities, mentions, strict=True) if m == answer]
            if not spans:
                raise ValueError(f"answer {answer!r} is not an entity of passage {split}-{p_idx}")
            qas.append(
                {"idx": q_idx, "id": f"gesa-sample-{split}-{p_idx:02d}-{q_idx}", "query": query, "answers": spans}
            )
        rows.append({"idx": p_idx, "source": SOURCE, "passage": {"text": text, "entities": entities}, "qas": qas})
    return rows


def render_jsonl(rows: list[dict]) -> str:
    """One JSON object per line, UTF-8 kept as is."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> None:
    """Write both splits next to this file."""
    for split, items in (("train", TRAIN), ("dev", DEV)):
        path = HERE / f"record_sample_{split}.jsonl"
        rows = build_rows(split, items)
        path.write_text(render_jsonl(rows), encoding="utf-8")
        print(f"{path.name}: {len(rows)} passages, {sum(len(r['qas']) for r in rows)} queries")


if __name__ == "__main__":
    main()
