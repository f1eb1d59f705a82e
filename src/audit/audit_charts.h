// The audit page's inline SVG charts (audit/audit_charts.cpp): the heatmap of first divergences
// by layer and position, with its colour scale, and the throughput per configuration, a bar at
// the median of the timed runs with a whisker over their range.
#pragma once

#include <string>

#include "audit/audit.h"

namespace tzero::audit_charts {

// "" when no run diverged at a known (layer, position).
std::string divergence_heatmap(const AuditReport& r);

// The throughput section's body: a table of every configuration's timing and, when none is
// under the noise floor, the bars; says why when they are not drawn.
std::string throughput(const AuditReport& r);

// A number for a table cell: "0", or three significant digits ("7.15e-07").
std::string short_number(double v);

}  // namespace tzero::audit_charts
