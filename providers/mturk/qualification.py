"""MTurk qualification tests built from a round's gold items: a QuestionForm with one
multiple-choice question per gold item, an AnswerKey scoring the expected choice, and a
percentage score as the qualification value (so a HIT can require e.g. 80 or more).

Each task type builds its own questions (``TaskType.gold_question``); pairwise and verification
gold items have a choice to score, the other types none. The XML is built here.
"""
from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape


from providers.base import ProviderRefused

from .provider import MTurkRefused

QUESTION_FORM_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2017-11-06/QuestionForm.xsd"
ANSWER_KEY_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/AnswerKey.xsd"


@dataclass
class GoldQuestion:
    identifier: str
    text: str
    choices: list[tuple[str, str]]
    expected: str


def gold_questions(round) -> list[GoldQuestion]:
    """One question per gold item that the round's task type can turn into a multiple choice."""
    handler = round.task_type_handler
    questions = []
    for item in round.items.filter(is_gold=True).order_by("position"):
        question = handler.gold_question(item)
        if question is not None:
            questions.append(GoldQuestion(identifier=f"item-{item.pk}", text=question["text"],
                                          choices=list(question["choices"]), expected=question["expected"]))
    return questions


def question_form(*, title: str, overview: str, questions: list[GoldQuestion]) -> str:
    parts = [f'<QuestionForm xmlns="{QUESTION_FORM_NS}">',
             f"<Overview><Title>{escape(title)}</Title><Text>{escape(overview)}</Text></Overview>"]
    for question in questions:
        selections = "".join(
            f"<Selection><SelectionIdentifier>{escape(key)}</SelectionIdentifier>"
            f"<Text>{escape(label)}</Text></Selection>"
            for key, label in question.choices
        )
        parts.append(
            f"<Question><QuestionIdentifier>{question.identifier}</QuestionIdentifier><IsRequired>true</IsRequired>"
            f"<QuestionContent><Text>{escape(question.text)}</Text></QuestionContent>"
            f"<AnswerSpecification><SelectionAnswer><StyleSuggestion>radiobutton</StyleSuggestion>"
            f"<Selections>{selections}</Selections></SelectionAnswer></AnswerSpecification></Question>"
        )
    parts.append("</QuestionForm>")
    return "".join(parts)


def answer_key(questions: list[GoldQuestion]) -> str:
    keyed = "".join(
        f"<Question><QuestionIdentifier>{question.identifier}</QuestionIdentifier><AnswerOption>"
        f"<SelectionIdentifier>{escape(question.expected)}</SelectionIdentifier><AnswerScore>1</AnswerScore>"
        f"</AnswerOption></Question>"
        for question in questions
    )
    return (
        f'<AnswerKey xmlns="{ANSWER_KEY_NS}">{keyed}<QualificationValueMapping><PercentageMapping>'
        f"<MaximumSummedScore>{len(questions)}</MaximumSummedScore></PercentageMapping></QualificationValueMapping>"
        f"</AnswerKey>"
    )


def create_qualification_test(*, provider, round, name: str, description: str, duration_seconds: int,
                              retry_delay_seconds: int | None = None) -> str:
    """Create the qualification type with the test; returns its id (for --qualification-type)."""
    questions = gold_questions(round)
    if not questions:
        raise ProviderRefused("the round has no gold items with a choice to score")
    params = dict(
        Name=name, Description=description, QualificationTypeStatus="Active",
        Test=question_form(title=name, overview=description, questions=questions),
        AnswerKey=answer_key(questions), TestDurationInSeconds=duration_seconds,
    )
    if retry_delay_seconds is not None:
        params["RetryDelayInSeconds"] = retry_delay_seconds
    try:
        response = provider._call("create_qualification_type", **params)
    except MTurkRefused as error:
        raise ProviderRefused(f"MTurk CreateQualificationType: {provider._message(error)}") from None
    return response["QualificationType"]["QualificationTypeId"]
