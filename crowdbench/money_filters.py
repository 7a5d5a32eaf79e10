"""The ``money`` template filter, built into every template: ``{{ amount|money:currency }}`` shows an
amount in the currency's minor unit ("9.60" USD, "90" JPY); nothing for None."""
from django import template

from kernel.money import format_money

register = template.Library()


@register.filter(name="money")
def money(amount, currency):
    return format_money(amount, currency)
