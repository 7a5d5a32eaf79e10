"""MTurk qualification tests built from a round's gold items: a QuestionForm with one
multiple-choice question per gold item, an AnswerKey scoring the expected choice, and a
percentage score as the qualification value (so a HIT can require e.g. 80 or more).

Pairwise and verification gold items have a choice to score; other task types have none.
"""
from __future__ import annotations

from dataclasses import dataclass
from xml.sax.saxutils import escape

from botocore.exceptions import ClientError

from providers.base import ProviderRefused

QUESTION_FORM_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2017-11-06/QuestionForm.xsd"
ANSWER_KEY_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/AnswerKey.xsd"
VERIFICATION_CHOICES = [
    ("correct", "Correct"),
    ("caption_problem", "Incorrect: the caption misses or misstates something"),
    ("response_problem", "Incorrect: the answer is wrong although the caption is fine"),
]


@dataclass
class GoldQuestion:
    identifier: str
    text: str
    choices: list[tuple[str, str]]
    expected: str


def gold_questions(round) -> list[GoldQuestion]:
    questions = []
    for item in round.items.filter(is_gold=True).order_by("position"):
        if round.task_type == "pairwise" and item.gold_answer.get("winner") in ("a", "b"):
            from annotation.task_types.pairwise import side_texts

            texts = side_texts(item)
            instance = item.output_a.instance
            questions.append(GoldQuestion(
                identifier=f"item-{item.pk}",
                text=f"Instruction: {instance.instruction}\n\nResponse A: {texts['a']}\n\nResponse B: {texts['b']}\n\n"
                     "Which response is better?",
                choices=[("a", "Response A"), ("b", "Response B")],
                expected=item.gold_answer["winner"],
            ))
        elif round.task_type == "verification" and item.gold_answer.get("outcome") in dict(VERIFICATION_CHOICES):
            candidate = item.candidate
            questions.append(GoldQuestion(
                identifier=f"item-{item.pk}",
                text=f"Instruction: {candidate.instance.instruction}\n\nAnswer: {candidate.text}\n\n"
                     "Is the answer correct?",
                choices=VERIFICATION_CHOICES,
                expected=item.gold_answer["outcome"],
            ))
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
    except ClientError as error:
        raise ProviderRefused(f"MTurk CreateQualificationType: {provider._message(error)}") from None
    return response["QualificationType"]["QualificationTypeId"]
