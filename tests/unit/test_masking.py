"""Secrets never reach a record: each row is a spelling seen in real error messages, and the mask
replaces the secret alone, never the rest of the message."""

from __future__ import annotations

import pytest

from ubunye_dagster.receipts.masking import is_secret_name, mask_tags, mask_text, mask_values

AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

#: (what an error said, what the record keeps)
SPELLINGS = {
    "key=value": (
        "connect failed: password=hunter2 host=db",
        "connect failed: password=*** host=db",
    ),
    "key: value": ("bad login (password: hunter2)", "bad login (password: ***)"),
    "query string": (
        "GET /api?user=bob&access_token=abc123&page=2 failed",
        "GET /api?user=bob&access_token=***&page=2 failed",
    ),
    "json": (
        'config {"user": "bob", "password": "hunter2", "port": 5432} refused',
        'config {"user": "bob", "password": "***", "port": 5432} refused',
    ),
    "json nested": (
        '{"db": {"credentials": {"api_key": "k-123"}}, "retries": 3}',
        '{"db": {"credentials": ***}, "retries": 3}',
    ),
    "json escaped quote": ('{"token": "a\\"b", "x": 1}', '{"token": "***", "x": 1}'),
    "python repr": (
        "ValueError: {'user': 'bob', 'password': 'hunter2'} is invalid",
        "ValueError: {'user': 'bob', 'password': '***'} is invalid",
    ),
    "python kwargs repr": (
        "Conn(host='db', secret_key='s3cr3t', port=5432)",
        "Conn(host='db', secret_key='***', port=5432)",
    ),
    "quoted value with spaces": (
        "PGPASSWORD='hunter two' psql -h db",
        "PGPASSWORD='***' psql -h db",
    ),
    "environment variable, space": (
        "env PGPASSWORD hunter2 exported",
        "env PGPASSWORD *** exported",
    ),
    "environment variable, prose after it": (
        "PGPASSWORD is not set",
        "PGPASSWORD is not set",
    ),
    "command line flag": ("psql --password hunter2 -h db", "psql --password *** -h db"),
    "postgres url": (
        "could not connect to postgresql://user:secret@host:5432/db",
        "could not connect to postgresql://user:***@host:5432/db",
    ),
    "s3 url with a slash in the secret": (
        f"s3://{AWS_KEY_ID}:{AWS_SECRET}@bucket/key.parquet not found",
        "s3://***:***@bucket/key.parquet not found",
    ),
    "bearer header": (
        "401 for Authorization: Bearer eyJhbGciOi.abc.def retry later",
        "401 for Authorization: Bearer *** retry later",
    ),
    "basic header": (
        "headers={'Authorization': 'Basic dXNlcjpwYXNz'}",
        "headers={'Authorization': 'Basic ***'}",
    ),
    "bare bearer": ("sent Bearer abcdefgh12345 to api", "sent Bearer *** to api"),
    "aws access key id": (
        f"InvalidAccessKeyId: {AWS_KEY_ID} does not exist",
        "InvalidAccessKeyId: *** does not exist",
    ),
    "aws secret key by shape": (
        f"signature mismatch for {AWS_SECRET} today",
        "signature mismatch for *** today",
    ),
    "aws config line": (
        f"aws_secret_access_key = {AWS_SECRET}",
        "aws_secret_access_key = ***",
    ),
    "upper case key": ("API_KEY=abc123 rejected", "API_KEY=*** rejected"),
    "camel case key": ('{"apiKey": "abc123"}', '{"apiKey": "***"}'),
    "passphrase": ("passphrase: opensesame rejected", "passphrase: *** rejected"),
    "prose that names a password": (
        'FATAL:  password authentication failed for user "bob"',
        'FATAL:  password authentication failed for user "bob"',
    ),
    "missing key keeps its name": ("KeyError: 'password'", "KeyError: 'password'"),
    "sha1 digest is not a secret key": (
        "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 failed",
        "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 failed",
    ),
    "partition key in prose is not a secret": (
        "partition key: 2024-01-31 is missing",
        "partition key: 2024-01-31 is missing",
    ),
    "a bare key is": ("key: abc123 rejected", "key: *** rejected"),
    "partition key is not a secret": (
        "partition_key=2024-01-31 missing",
        "partition_key=2024-01-31 missing",
    ),
}


#: A mapping or list under a secret-looking name, in JSON and in Python repr, holding more
#: mappings or lists 1 and 3 deep: the whole value becomes ``***`` and the text around it is kept.
NESTED_SECRET_VALUES = {
    "repr mapping, depth 1 (the database config)": (
        "cannot reach the database with {'host': 'db.example.internal', "
        "'auth': {'user': 'app', 'api-token': 't-1'}}, giving up",
        "cannot reach the database with {'host': 'db.example.internal', 'auth': ***}, giving up",
    ),
    "json mapping, depth 1": (
        '{"host": "db", "auth": {"user": "app", "token": "t-1"}, "port": 5432} refused',
        '{"host": "db", "auth": ***, "port": 5432} refused',
    ),
    "repr mapping, depth 3": (
        "{'auth': {'oauth': {'client': {'id': 'c', 'secret': 's'}}}, 'port': 5432} failed",
        "{'auth': ***, 'port': 5432} failed",
    ),
    "json mapping, depth 3": (
        '{"credentials": {"a": {"b": {"c": "x"}}}, "retries": [1, 2]}',
        '{"credentials": ***, "retries": [1, 2]}',
    ),
    "json list, depth 1": (
        '{"api_keys": ["k1", "k2"], "region": "eu"}',
        '{"api_keys": ***, "region": "eu"}',
    ),
    "repr list, depth 1": (
        "Client(tokens=['t1', 't2'], region='eu') rejected",
        "Client(tokens=***, region='eu') rejected",
    ),
    "repr list of mappings, depth 3": (
        "sources=[{'name': 'api', 'credentials': [{'user': 'u', 'scopes': ['read']}]}] retry",
        "sources=[{'name': 'api', 'credentials': ***}] retry",
    ),
    "json list of lists, depth 3": (
        '{"secret": [[["a"]], ["b"]], "ok": true}',
        '{"secret": ***, "ok": true}',
    ),
    "secret name 3 deep in ordinary mappings": (
        '{"a": {"b": {"c": {"password": {"v": "x"}}}}, "n": 1}',
        '{"a": {"b": {"c": {"password": ***}}}, "n": 1}',
    ),
    "keyword argument holding a mapping": (
        "Conn(host='db', auth={'user': 'app', 'pwd': 'x'}, port=5)",
        "Conn(host='db', auth=***, port=5)",
    ),
    "brackets inside quoted text of the value": (
        '{"token": {"v": "a}]b{["}, "x": 1}',
        '{"token": ***, "x": 1}',
    ),
    "a value cut off before it closes": (
        "{'auth': {'user': 'app', 'pass",
        "{'auth': ***",
    ),
    "ordinary nested values are kept": (
        "{'db': {'host': 'h', 'ports': [1, 2]}, 'mode': 'ro'}",
        "{'db': {'host': 'h', 'ports': [1, 2]}, 'mode': 'ro'}",
    ),
}


@pytest.mark.parametrize(("said", "kept"), list(SPELLINGS.values()), ids=list(SPELLINGS))
def test_a_secret_in_an_error_message_is_masked_and_the_rest_is_kept(said, kept):
    assert mask_text(said) == kept


@pytest.mark.parametrize(
    ("said", "kept"), list(NESTED_SECRET_VALUES.values()), ids=list(NESTED_SECRET_VALUES)
)
def test_a_nested_value_under_a_secret_name_is_masked_whole_with_brackets_balanced(said, kept):
    assert mask_text(said) == kept


@pytest.mark.parametrize(
    "name",
    [
        "password",
        "DB_PASSWORD",
        "PGPASSWORD",
        "db-pass",
        "Secret",
        "client.secret",
        "token",
        "githubToken",
        "api_key",
        "ApiKey",
        "X-API-KEY",
        "key",
        "ssh key",
        "aws_access_key_id",
        "credential",
        "gcp-credentials",
        "private",
        "privateKey",
        "passphrase",
        "SSH_PASSPHRASE",
    ],
)
def test_names_that_look_secret_in_any_case_and_separator_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["partition_key", "dagster/run_key", "asset_key", "user", "host", "keyboard", "monkey"]
)
def test_ordinary_names_are_not_secret(name):
    assert not is_secret_name(name)


def test_run_tags_with_secret_names_are_masked_whole_and_others_keep_their_text():
    tags = {
        "db_password": "hunter2",
        "API-Token": "abc",
        "owner": "data-team",
        "dsn_note": "postgresql://u:pw@h/db",
        "note": "postgresql://u:pw@h/db",
    }
    assert mask_tags(tags) == {
        "db_password": "***",
        "API-Token": "***",
        "owner": "data-team",
        "dsn_note": "***",
        "note": "postgresql://u:***@h/db",
    }


def test_config_fields_with_secret_names_are_masked_at_any_depth():
    config = {
        "warehouse": {"host": "db", "port": 5432, "Password": "hunter2"},
        "sources": [{"name": "api", "auth": {"clientSecret": "s", "scope": "read"}}],
        "batch_size": 10,
        "private_key": None,
    }
    assert mask_values(config) == {
        "warehouse": {"host": "db", "port": 5432, "Password": "***"},
        "sources": [{"name": "api", "auth": "***"}],
        "batch_size": 10,
        "private_key": None,
    }
