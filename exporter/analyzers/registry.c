// SPDX-License-Identifier: GPL-2.0-only
#include "analyzer.h"

extern const struct analyzer drop_analyzer;
extern const struct analyzer retrans_analyzer;
extern const struct analyzer rtt_analyzer;

const struct analyzer *const analyzers[] = {
	&drop_analyzer,
	&retrans_analyzer,
	&rtt_analyzer,
	NULL,
};
