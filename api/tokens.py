"""The caller's own API tokens: list them by name, create a named one (its secret is in the answer to
the POST that made it, and nowhere else, ever), revoke one by name (``projects.tokens``)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.response import Response

from projects.tokens import MAX_TOKEN_NAME, create_token, revoke_token, token_rows

from .access import ResearcherAPIMixin


class TokenSerializer(serializers.Serializer):
    name = serializers.CharField()
    token_key = serializers.CharField(help_text="The token's first characters.")
    created = serializers.DateTimeField()
    expiry = serializers.DateTimeField(allow_null=True)


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(help_text="The token: shown in this answer only; only its digest is kept.")


class TokenRequestSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, max_length=MAX_TOKEN_NAME,
                                 help_text="Unique among your tokens; none given: its first characters.")


class ApiTokenViewSet(ResearcherAPIMixin, viewsets.ViewSet):
    """Your API tokens, by name."""

    lookup_field = "name"
    lookup_value_regex = r"[^/]{1,100}"
    pagination_class = None
    filter_backends = []

    @extend_schema(responses={200: TokenSerializer(many=True)})
    def list(self, request):
        return Response(TokenSerializer(token_rows(request.user), many=True).data)

    @extend_schema(request=TokenRequestSerializer, responses={201: NewTokenSerializer})
    def create(self, request):
        incoming = TokenRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        record, token = create_token(user=request.user, name=incoming.validated_data.get("name"))
        row = next(row for row in token_rows(request.user) if row.token_key == record.token_key)
        return Response({**TokenSerializer(row).data, "token": token}, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None})
    def destroy(self, request, name=None):
        revoke_token(user=request.user, name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)
