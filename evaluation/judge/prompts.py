"""The judge's prompts: versioned ``PromptTemplate`` rows that researchers may edit in the admin.

Structure after the paper (§5, Appendix F): a system prompt describing the judging task; the
instruction-conditioned caption(s) standing in for the image(s); the instruction; "Response A"
and "Response B"; with a reference, the human-verified reference too; step-by-step reasoning
that ends in the fixed phrase "Overall, Response A is better." or "Overall, Response B is better.".
A third template asks a cheaper model to pull the verdict out of an answer that lacks the phrase.
"""
from __future__ import annotations

from llm.calls import RenderedPrompt
from llm.models import PromptTemplate
from llm.services import ensure_default_templates, render_template

SYSTEM = "visitbench-judge-system"
NO_REFERENCE = "visitbench-judge-no-reference"
WITH_REFERENCE = "visitbench-judge-reference"
EXTRACTION = "visitbench-judge-extraction"

_CLOSING = (
    "Think step by step: say what the instruction asks for, check each response against the "
    "image description{reference_note}, weigh accuracy, helpfulness and level of detail, and then "
    "finish with exactly one of these two sentences on a line of its own, and nothing after it:\n"
    "Overall, Response A is better.\n"
    "Overall, Response B is better.\n"
    "You must choose one of them, even when both responses are good or both are poor."
)

DEFAULTS = {
    SYSTEM: (
        "You are an expert judge of vision-and-language assistants. You cannot see the image(s); you "
        "are given a detailed description of them, written for this instruction, which you should trust "
        "as the ground truth of what the image(s) show. Two assistants answered the instruction. Decide "
        "which response follows the instruction better. Judge only the content: do not favour a response "
        "because of its position, its length or its style.",
        "Judge: the system prompt (both modes).",
    ),
    NO_REFERENCE: (
        "Image description:\n{captions}\n\n"
        "Instruction: {instruction}\n\n"
        "Response A: {response_a}\n\n"
        "Response B: {response_b}\n\n"
        + _CLOSING.replace("{reference_note}", ""),
        "Judge without a reference (the paper's GPT4-no-ref): captions, instruction, responses A and B.",
    ),
    WITH_REFERENCE: (
        "Image description:\n{captions}\n\n"
        "Instruction: {instruction}\n\n"
        "Reference response, verified by people as correct: {reference}\n\n"
        "Response A: {response_a}\n\n"
        "Response B: {response_b}\n\n"
        + _CLOSING.replace("{reference_note}", " and the reference response"),
        "Judge with the human-verified reference (the paper's GPT4-ref).",
    ),
    EXTRACTION: (
        "Below is a judge's comparison of two responses, Response A and Response B. Which response did "
        "the judge finally prefer? Answer with one letter, A or B. If the judge preferred neither or "
        "declared a tie, answer none. Answer with nothing else.\n\nJudge's comparison:\n{judgment}",
        "Judge: extraction of a verdict missing from an answer, asked of a cheaper model.",
    ),
}


def ensure_judge_templates() -> dict[str, PromptTemplate]:
    """The judge's templates; a version edited in the admin stays the one used."""
    return ensure_default_templates(DEFAULTS)


def format_captions(captions: list[str]) -> str:
    if len(captions) == 1:
        return captions[0]
    return "\n".join(f"Image {number}: {text}" for number, text in enumerate(captions, start=1))


def judge_prompts(
    *, captions: list[str], instruction: str, response_a: str, response_b: str, reference: str | None
) -> tuple[RenderedPrompt, RenderedPrompt]:
    """(system prompt, user prompt) for one ordering; the user prompt's template is the one
    recorded with the call (its name says the mode, its version which wording)."""
    values = dict(captions=format_captions(captions), instruction=instruction,
                  response_a=response_a, response_b=response_b)
    if reference is None:
        user = render_template(NO_REFERENCE, **values)
    else:
        user = render_template(WITH_REFERENCE, reference=reference, **values)
    return render_template(SYSTEM), user


def extraction_prompt(judgment: str) -> RenderedPrompt:
    return render_template(EXTRACTION, judgment=judgment)
