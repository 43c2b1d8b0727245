"""Labels of the web page in English and Chinese: the report's own (``i18n.LABELS``) plus the
page's. ``labels(lang)`` gives one flat mapping for the templates."""

from __future__ import annotations

from functools import cache

from trainsizer.i18n import LABELS, LANGS
from trainsizer.report.charts import TIGHT_FRACTION

WEB_LABELS: dict[str, dict[str, str]] = {
    "page_title": {"en": "trainsizer planner", "zh-CN": "trainsizer 训练资源规划"},
    "tagline": {"en": "For this model, trained this way, what GPUs do we need?",
                "zh-CN": "这个模型、这样训练，需要什么样的 GPU？"},
    "language": {"en": "Language", "zh-CN": "语言"},
    "model": {"en": "Model", "zh-CN": "模型"},
    "preset": {"en": "Preset (search the catalog)", "zh-CN": "预置模型（在目录中搜索）"},
    "config_json": {"en": "…or paste a Hugging Face config.json", "zh-CN": "……或粘贴 Hugging Face config.json"},
    "config_hint": {"en": "When filled, it is used instead of the preset.", "zh-CN": "填写后将代替预置模型。"},
    "training": {"en": "Training", "zh-CN": "训练"},
    "method": {"en": "Method", "zh-CN": "训练方式"},
    "precision": {"en": "Precision", "zh-CN": "精度"},
    "optimizer": {"en": "Optimizer", "zh-CN": "优化器"},
    "micro_batch": {"en": "Micro-batch size", "zh-CN": "微批大小"},
    "seq_len": {"en": "Sequence length", "zh-CN": "序列长度"},
    "global_batch": {"en": "Global batch (sequences per step)", "zh-CN": "全局批大小（每步序列数）"},
    "tokens": {"en": "Training tokens", "zh-CN": "训练总 token 数"},
    "checkpointing": {"en": "Activation checkpointing", "zh-CN": "激活重计算"},
    "lora_rank": {"en": "LoRA rank", "zh-CN": "LoRA 秩"},
    "lora_targets": {"en": "LoRA targets", "zh-CN": "LoRA 目标模块"},
    "targets_default": {"en": "peft default", "zh-CN": "peft 默认"},
    "quantization": {"en": "Quantization (QLoRA)", "zh-CN": "量化（QLoRA）"},
    "none": {"en": "none", "zh-CN": "无"},
    "constraints": {"en": "Constraints", "zh-CN": "约束条件"},
    "gpus_allowed": {"en": "GPUs allowed (none selected = all)", "zh-CN": "可选 GPU（不选 = 全部）"},
    "max_gpus": {"en": "Max GPUs", "zh-CN": "最多 GPU 数"},
    "gpus_per_node": {"en": "GPUs per server", "zh-CN": "每台服务器 GPU 数"},
    "any": {"en": "any", "zh-CN": "不限"},
    "budget": {"en": "Budget", "zh-CN": "预算"},
    "currency": {"en": "Currency", "zh-CN": "币种"},
    "deadline_days": {"en": "Deadline (days)", "zh-CN": "工期（天）"},
    "site": {"en": "Site", "zh-CN": "机房"},
    "horizon": {"en": "Horizon (years)", "zh-CN": "使用年限（年）"},
    "utilisation": {"en": "Utilisation", "zh-CN": "利用率"},
    "want_scale": {"en": "Also draw the scaling curve", "zh-CN": "同时绘制扩展曲线"},
    "submit": {"en": "Plan", "zh-CN": "开始规划"},
    "planning": {"en": "Planning…", "zh-CN": "规划中……"},
    "failed": {"en": "The request failed", "zh-CN": "请求失败"},
    "busy": {"en": "The planner is busy; try again in a moment.", "zh-CN": "规划器繁忙，请稍后重试。"},
    "invalid_json": {"en": "not valid JSON", "zh-CN": "不是有效的 JSON"},
    "recommendation": {"en": "Recommendation", "zh-CN": "推荐方案"},
    "in_servers": {"en": "in {nodes} server(s) of {per}", "zh-CN": "（{nodes} 台服务器，每台 {per} 卡）"},
    "because": {"en": "because", "zh-CN": "理由"},
    "nothing_plan": {"en": "Nothing fits", "zh-CN": "没有可行方案"},
    "suggestions": {"en": "What would make it fit", "zh-CN": "怎样才能放下"},
    "layout": {"en": "Layout", "zh-CN": "并行方式"},
    "step_time": {"en": "Step time", "zh-CN": "单步时间"},
    "tokens_per_s": {"en": "Tokens/s", "zh-CN": "每秒 token 数"},
    "mfu": {"en": "MFU", "zh-CN": "MFU（算力利用率）"},
    "time_to_train": {"en": "Time to train", "zh-CN": "训练时长"},
    "memory_per_gpu": {"en": "Memory per GPU", "zh-CN": "单卡显存"},
    "why_option": {"en": "What binds", "zh-CN": "瓶颈"},
    "bom": {"en": "Bill of materials", "zh-CN": "物料清单"},
    "servers": {"en": "Servers", "zh-CN": "服务器"},
    "host": {"en": "Host per server", "zh-CN": "每台服务器主机配置"},
    "ram": {"en": "RAM", "zh-CN": "内存"},
    "cores": {"en": "CPU cores", "zh-CN": "CPU 核数"},
    "storage": {"en": "Storage", "zh-CN": "存储"},
    "network": {"en": "Network", "zh-CN": "网络"},
    "power": {"en": "Power", "zh-CN": "功耗"},
    "site_fit": {"en": "Site fit", "zh-CN": "机房适配"},
    "rent_vs_buy": {"en": "Rent vs buy", "zh-CN": "租用还是购买"},
    "capex": {"en": "Buy: capex", "zh-CN": "购买：一次性投入"},
    "opex": {"en": "Buy: opex per year", "zh-CN": "购买：每年运营成本"},
    "buy_total": {"en": "Buy: total over the horizon", "zh-CN": "购买：使用期总成本"},
    "rent_year": {"en": "Rent per year", "zh-CN": "租用：每年"},
    "rent_total": {"en": "Rent: total over the horizon", "zh-CN": "租用：使用期总成本"},
    "break_even": {"en": "Break-even", "zh-CN": "回本时间"},
    "months": {"en": "months", "zh-CN": "个月"},
    "never": {"en": "never", "zh-CN": "无法回本"},
    "verdict": {"en": "Verdict", "zh-CN": "结论"},
    "no_cost": {"en": "no price data for this GPU", "zh-CN": "没有该 GPU 的价格数据"},
    "charts": {"en": "Charts", "zh-CN": "图表"},
    "gpus": {"en": "GPUs", "zh-CN": "GPU 数"},
    "rankings": {"en": "Rankings", "zh-CN": "方案排名"},
    "gpu": {"en": "GPU", "zh-CN": "GPU"},
    "nodes": {"en": "Servers", "zh-CN": "服务器数"},
    "ranked": {"en": "Ranked", "zh-CN": "排名"},
    "compare": {"en": "Compare", "zh-CN": "对比"},
    "compare_title": {"en": "Two options side by side", "zh-CN": "两个方案并排对比"},
    "compare_hint": {"en": "Tick two rows of the rankings table to compare them.",
                     "zh-CN": "在排名表中勾选两行进行对比。"},
    "r_recommended": {"en": "recommended", "zh-CN": "推荐"},
    "r_fastest": {"en": "fastest", "zh-CN": "最快"},
    "r_fewest_gpus": {"en": "fewest GPUs", "zh-CN": "GPU 最少"},
    "r_best_mfu": {"en": "best MFU", "zh-CN": "MFU 最高"},
    "r_cheapest_to_buy": {"en": "cheapest to buy", "zh-CN": "购买最便宜"},
    "r_pareto_time_vs_gpus": {"en": "Pareto", "zh-CN": "帕累托"},
    "fits_site": {"en": "fits", "zh-CN": "可容纳"},
    "no_fit_site": {"en": "does not fit", "zh-CN": "放不下"},
    "candidates": {"en": "candidate layouts screened", "zh-CN": "个候选方案已筛选"},
    "timeline": {"en": "Deployment timeline", "zh-CN": "部署时间表"},
    "days": {"en": "days", "zh-CN": "天"},
    "verification": {"en": "Verify before you buy", "zh-CN": "购买前的验证步骤"},
    "prices_used": {"en": "Prices used", "zh-CN": "所用价格来源"},
    "api_docs": {"en": "API (OpenAPI)", "zh-CN": "接口文档（OpenAPI）"},
    "mem_fits": {"en": "fits", "zh-CN": "可以放下"},
    "mem_tight": {"en": f"tight: over {TIGHT_FRACTION:.0%} of capacity",
                  "zh-CN": f"偏紧：超过显存容量的 {TIGHT_FRACTION:.0%}"},
    "mem_no_fit": {"en": "does not fit", "zh-CN": "放不下"},
    "download": {"en": "Download the plan", "zh-CN": "下载方案"},
    "download_xlsx": {"en": "Excel (.xlsx)", "zh-CN": "Excel（.xlsx）"},
    "download_csv": {"en": "CSV", "zh-CN": "CSV"},
    "export_failed": {"en": "The download failed", "zh-CN": "下载失败"},
    "on_the_machine": {"en": "on the machine:", "zh-CN": "在机器上运行："},
    "result_answer": {"en": "Answer", "zh-CN": "结论"},
    "result_details": {"en": "Deployment and verification", "zh-CN": "部署与验证"},
}


def resolve(lang: str | None, accept_language: str | None = None) -> str:
    """``lang`` when it is one of LANGS, else Chinese for an Accept-Language starting with zh."""
    if lang in LANGS:
        return lang
    if lang and lang.lower().startswith("zh"):
        return "zh-CN"
    if lang is None and accept_language and accept_language.strip().lower().startswith("zh"):
        return "zh-CN"
    return "en"


@cache
def labels(lang: str) -> dict[str, str]:
    lang = resolve(lang)
    merged = {key: text[lang] for key, text in LABELS.items()}
    merged.update({key: text[lang] for key, text in WEB_LABELS.items()})
    return merged
