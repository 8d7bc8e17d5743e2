/* SPDX-License-Identifier: MIT */
/* json.c - a small streaming JSON writer: enough for the engine's report, nothing more. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define JSON_MAX_DEPTH 16

struct json_writer {
	FILE *out;
	bool close_out;
	int depth;
	bool first[JSON_MAX_DEPTH];
};

struct json_writer *json_open(const char *path)
{
	struct json_writer *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return NULL;
	if (strcmp(path, "-") == 0) {
		w->out = stdout;
	} else {
		w->out = fopen(path, "w");
		w->close_out = true;
		if (w->out == NULL) {
			free(w);
			return NULL;
		}
	}
	w->first[0] = true;
	fputc('{', w->out);
	return w;
}

void json_close(struct json_writer *w)
{
	fputs("\n}\n", w->out);
	if (w->close_out)
		fclose(w->out);
	else
		fflush(w->out);
	free(w);
}

static void json_escaped(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\n': fputs("\\n", out); break;
		case '\t': fputs("\\t", out); break;
		case '\r': fputs("\\r", out); break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* Separator, indentation and "key": for the next value; key is NULL inside arrays. */
static void json_prefix(struct json_writer *w, const char *key)
{
	if (!w->first[w->depth])
		fputc(',', w->out);
	w->first[w->depth] = false;
	fprintf(w->out, "\n%*s", 2 * (w->depth + 1), "");
	if (key != NULL) {
		json_escaped(w->out, key);
		fputs(": ", w->out);
	}
}

static void json_open_nested(struct json_writer *w, const char *key, char bracket)
{
	json_prefix(w, key);
	fputc(bracket, w->out);
	if (w->depth + 1 < JSON_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
}

static void json_close_nested(struct json_writer *w, char bracket)
{
	bool empty = w->first[w->depth];
	w->depth--;
	if (!empty)
		fprintf(w->out, "\n%*s", 2 * (w->depth + 1), "");
	fputc(bracket, w->out);
}

void json_begin_object(struct json_writer *w, const char *key) { json_open_nested(w, key, '{'); }
void json_end_object(struct json_writer *w) { json_close_nested(w, '}'); }
void json_begin_array(struct json_writer *w, const char *key) { json_open_nested(w, key, '['); }
void json_end_array(struct json_writer *w) { json_close_nested(w, ']'); }

void json_string(struct json_writer *w, const char *key, const char *value)
{
	json_prefix(w, key);
	if (value == NULL)
		fputs("null", w->out);
	else
		json_escaped(w->out, value);
}

void json_int(struct json_writer *w, const char *key, long long value)
{
	json_prefix(w, key);
	fprintf(w->out, "%lld", value);
}

void json_uint(struct json_writer *w, const char *key, unsigned long long value)
{
	json_prefix(w, key);
	fprintf(w->out, "%llu", value);
}

void json_double(struct json_writer *w, const char *key, double value)
{
	json_prefix(w, key);
	if (isfinite(value))
		fprintf(w->out, "%.17g", value);
	else
		fputs("null", w->out); /* JSON has no NaN or infinity */
}

void json_bool(struct json_writer *w, const char *key, bool value)
{
	json_prefix(w, key);
	fputs(value ? "true" : "false", w->out);
}

void json_null(struct json_writer *w, const char *key)
{
	json_prefix(w, key);
	fputs("null", w->out);
}
