"""Deterministic text for generated documents: English report prose and Chinese sentences.

Nothing here is downloaded: the English sentences are assembled from fixed
phrase lists by a seeded :class:`random.Random`; the Chinese sentences are
written out below. The same seed always gives the same text.

The word ``continuation`` is reserved for the hyphenated page-break word of
:func:`tests.docgen.english_report`; no generated sentence contains it, so a
test can search for it unambiguously.
"""

from __future__ import annotations

import random

_SUBJECTS = [
    "The regional sales team",
    "Our operations group",
    "The finance department",
    "The procurement office",
    "The engineering division",
    "The customer service centre",
    "The logistics unit",
    "The internal audit function",
    "The research laboratory",
    "Each business unit",
    "The board of directors",
    "The northern plant",
    "The product design studio",
    "The quality assurance team",
    "Management",
    "The information technology group",
]

_VERBS = [
    "reviewed",
    "expanded",
    "simplified",
    "renegotiated",
    "completed",
    "strengthened",
    "modernised",
    "consolidated",
    "examined",
    "streamlined",
    "introduced",
    "updated",
    "documented",
    "replaced",
    "tested",
]

_OBJECTS = [
    "the supplier agreements",
    "its reporting process",
    "the warehouse layout",
    "the quarterly planning cycle",
    "the maintenance schedule",
    "the training programme for new staff",
    "the pricing model for small customers",
    "the billing platform",
    "the safety procedures on every site",
    "the delivery routes in the coastal region",
    "the energy contracts",
    "the product catalogue",
    "the approval workflow for capital spending",
    "the network of regional partners",
    "the inventory controls",
    "the complaint handling guidelines",
]

_TAILS = [
    "during the second quarter",
    "ahead of the original schedule",
    "despite higher input costs",
    "with support from external advisers",
    "after a detailed consultation with employees",
    "in line with the approved budget",
    "before the start of the peak season",
    "as part of the efficiency plan",
    "following feedback from several large clients",
    "without interrupting daily operations",
    "at a lower cost than expected",
    "over a period of six months",
    "in close cooperation with local authorities",
    "to prepare for the planned expansion",
]

_CONNECTORS = [
    "",
    "",
    "",
    "In addition, ",
    "As a result, ",
    "However, ",
    "At the same time, ",
    "Later in the year, ",
    "For this reason, ",
    "In the same period, ",
]

_REGIONS = ["northern", "southern", "eastern", "western", "central", "coastal", "export"]
_METRICS = ["Revenue", "Operating profit", "Order intake", "Gross margin", "Customer retention"]
_TRENDS = ["rose", "fell", "increased", "declined", "improved"]
_REASONS = [
    "mainly because of stronger demand for spare parts",
    "largely due to the new service contracts",
    "partly as a consequence of lower freight rates",
    "which reflects the timing of several large orders",
    "after the closure of two unprofitable outlets",
    "as customers moved to longer agreements",
]

#: Complete bullet items (verb and object belong together); a tail may follow.
LIST_ITEMS = [
    "Completed the migration of the billing platform to the new data centre",
    "Opened two distribution centres in the eastern region",
    "Reduced energy use per unit of output by eleven percent",
    "Launched a self-service portal for small business customers",
    "Trained more than four hundred employees in the new safety rules",
    "Replaced the ageing fleet of delivery vans with electric vehicles",
    "Signed long-term supply agreements with three key vendors",
    "Introduced a simpler expense policy for all travelling staff",
    "Extended opening hours at the busiest service counters",
    "Upgraded the warehouse management system at the main site",
    "Started a mentoring scheme for graduate engineers",
    "Tightened the quality checks on incoming materials",
    "Set up a shared payroll service for the smaller subsidiaries",
    "Awarded the contract for the second assembly line",
    "Replaced paper invoices with electronic ones for most suppliers",
    "Completed the tender process for the new headquarters",
    "Opened a regional call centre serving the northern provinces",
    "Cut waiting times for routine repairs to under five days",
    "Extended the customer survey to cover online orders",
    "Adopted a new supplier code of conduct",
    "Renewed the cooling equipment in both data rooms",
    "Froze spare part prices for long-standing customers",
    "Ran a pilot for weekend deliveries in two cities",
    "Revised the emergency response plan for every warehouse",
]
_LIST_TAILS = ["", "", " within budget", " ahead of plan", " across all sites", " by the end of June"]


class EnglishProse:
    """Seeded source of report-style English sentences, paragraphs and list items.

    ``EnglishProse(seed)`` yields the same sequence of calls' results every
    time for the same seed. Sentences end with a full stop; list items don't.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def sentence(self) -> str:
        """One sentence, 8–25 words, from one of three templates."""
        r = self.rng
        kind = r.random()
        if kind < 0.6:
            text = f"{r.choice(_SUBJECTS)} {r.choice(_VERBS)} {r.choice(_OBJECTS)} {r.choice(_TAILS)}."
            connector = r.choice(_CONNECTORS)
            if connector:
                text = connector + text[0].lower() + text[1:]
            return text
        if kind < 0.85:
            pct = r.randint(2, 19)
            return (
                f"{r.choice(_METRICS)} in the {r.choice(_REGIONS)} segment {r.choice(_TRENDS)} "
                f"by {pct} percent compared with the previous year, {r.choice(_REASONS)}."
            )
        count = r.randint(3, 48)
        return (
            f"A total of {count} projects were approved, and {r.choice(_SUBJECTS).lower()} "
            f"will report on their progress {r.choice(_TAILS)}."
        )

    def sentences(self, n: int) -> list[str]:
        return [self.sentence() for _ in range(n)]

    def list_items(self, n: int) -> list[str]:
        """``n`` distinct bullet items (verb phrases without a final full stop), n <= 24."""
        r = self.rng
        return [item + r.choice(_LIST_TAILS) for item in r.sample(LIST_ITEMS, n)]


#: Hand-written sentences of a simplified-Chinese annual report (each a
#: complete sentence ending in 。).
CHINESE_SENTENCES = [
    "本年度公司坚持稳中求进的工作总基调，各项业务保持了平稳健康的发展态势。",
    "全年实现营业收入一百二十八亿元，同比增长百分之九点六。",
    "在市场需求持续波动的情况下，管理层及时调整经营策略，有效控制了成本。",
    "研发投入占营业收入的比重进一步提高，新产品的销售额首次超过总额的三成。",
    "公司在华东和华南地区新建了两个物流中心，配送效率明显提升。",
    "我们继续推进数字化转型，核心业务系统已全部迁移到新的平台。",
    "客户满意度调查显示，综合评分比上一年度提高了四个百分点。",
    "面对原材料价格上涨的压力，采购部门通过集中招标降低了采购成本。",
    "安全生产始终是各项工作的重中之重，全年未发生重大安全事故。",
    "公司积极履行社会责任，向偏远地区的学校捐赠了图书和教学设备。",
    "在节能减排方面，主要生产基地的单位能耗同比下降了百分之六。",
    "人才是企业发展的根本，本年度共招聘应届毕业生三百余人。",
    "我们建立了更加完善的培训体系，员工人均培训时间超过四十小时。",
    "海外业务稳步拓展，东南亚市场的销售收入增长了近一倍。",
    "董事会高度重视风险管理，定期审议内部控制评价报告。",
    "财务状况保持稳健，资产负债率控制在合理区间之内。",
    "经营活动产生的现金流量净额较上年有所增加，为后续投资提供了保障。",
    "展望未来，行业竞争将更加激烈，技术变革的速度也在不断加快。",
    "公司将继续聚焦主营业务，加大对关键技术和核心产品的投入。",
    "我们计划在明年启动新一轮的产能扩建项目，预计两年内完成。",
    "同时，公司将进一步优化组织结构，提高决策效率和执行能力。",
    "在产品质量方面，我们引入了新的检测设备，出厂合格率持续保持高位。",
    "各子公司之间的协同效应逐步显现，共享服务中心已正式运行。",
    "公司与多所高校签订了合作协议，共同培养专业技术人才。",
    "在绿色发展理念的指导下，新建厂房全部采用了节能环保材料。",
    "本年度共申请发明专利八十六项，其中四十二项已获得授权。",
    "我们高度重视投资者关系，全年举办了十余场业绩说明会和路演活动。",
    "受汇率波动影响，部分出口产品的利润率略有下降。",
    "为应对这一变化，财务部门加强了外汇风险的管理和对冲。",
    "公司治理结构不断完善，独立董事在重大事项中发挥了积极作用。",
    "我们衷心感谢广大股东、客户和合作伙伴长期以来的信任与支持。",
    "新的一年里，全体员工将团结一心，努力完成既定的经营目标。",
]


class ChineseProse:
    """Seeded source of Chinese paragraphs drawn from :data:`CHINESE_SENTENCES`.

    Sentences are dealt from a shuffled deck; a new shuffled deck starts when
    one runs out, so a short document never repeats a sentence.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._deck: list[str] = []

    def sentence(self) -> str:
        if not self._deck:
            self._deck = list(CHINESE_SENTENCES)
            self.rng.shuffle(self._deck)
        return self._deck.pop()

    def sentences(self, n: int) -> list[str]:
        return [self.sentence() for _ in range(n)]
