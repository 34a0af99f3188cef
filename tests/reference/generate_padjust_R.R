# Reference values for medaudit's p-value adjustment, computed with R's stats::p.adjust.
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_padjust_R.R
#
# Writes padjust_R.csv next to this script, long form:
#     case,method,n_arg,index,p,p_adjusted
#   case        name of the input vector (below)
#   method      "holm" or "BH" (R's spelling)
#   n_arg       "default": p.adjust(p, method) with n left at its default;
#               an integer: p.adjust(p, method, n = <that integer>), here always length(p)
#               *including* the NAs, passed explicitly
#   index       1-based position in the input vector
#   p, p_adjusted   written with sprintf("%.17g") (exact round trip); missing values are
#               written as the literal string NA (pandas.read_csv reads it as NaN)
#
# NA handling in R (checked by the stopifnot()s below, R 4.2.2):
#   p.adjust's signature is p.adjust(p, method, n = length(p)), but the default for n is a
#   promise that is only forced after the body has done `p <- p[!is.na(p)]`.  So by default
#   n is the number of NON-NA p-values: NAs are held out and not counted (medaudit
#   nan_policy = "omit").  Passing n = length(p) explicitly (evaluated by the caller, with
#   the NAs) keeps the NAs out of the ranking but counts them in n (nan_policy = "count").
#   NA positions stay NA in the output in both cases.
#   Also: if n <= 1, p.adjust returns its input unchanged (case "single_nonna").

RNGkind(kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})

fmt <- function(x) {
  out <- sprintf("%.17g", x)
  out[is.na(x)] <- "NA"
  stopifnot(identical(as.numeric(out[!is.na(x)]), as.numeric(x[!is.na(x)])))
  out
}

cases <- list(
  # plain: 10 distinct p-values, deliberately not sorted.
  plain = c(0.039, 0.001, 0.212, 0.041, 0.008, 0.216, 0.06, 0.042, 0.205, 0.074),
  # ties: repeated values, including ties that straddle the holm/BH monotonicity steps.
  ties = c(0.02, 0.01, 0.03, 0.02, 0.03, 0.5, 0.03, 0.01, 0.04, 0.02),
  # extremes: values at/near 0 and at/near 1 (adjusted values cap at 1).
  extremes = c(0, 1e-300, 2.2e-16, 5e-17, 1e-10, 0.5, 0.999999, 0.9999999999, 1 - 1e-12, 1),
  # with_na: NAs mixed in.
  with_na = c(0.04, NA, 0.01, 0.03, NA, 0.2, 0.002, 0.5),
  # single_nonna: only one non-NA value -> default n = 1 -> returned unadjusted.
  single_nonna = c(NA, 0.03, NA)
)
methods <- c("holm", "BH")

# --- verify the NA behaviour described above -------------------------------------------------
local({
  p <- cases$with_na
  q <- p[!is.na(p)]
  for (m in methods) {
    stopifnot(identical(p.adjust(p, m)[!is.na(p)], p.adjust(q, m)),
              identical(p.adjust(p, m)[!is.na(p)], p.adjust(q, m, n = length(q))),
              identical(is.na(p.adjust(p, m)), is.na(p)),
              identical(is.na(p.adjust(p, m, n = length(p))), is.na(p)),
              !identical(p.adjust(p, m), p.adjust(p, m, n = length(p))))
  }
  stopifnot(identical(p.adjust(cases$single_nonna, "holm"), cases$single_nonna))
})

rows <- list()
for (cs in names(cases)) {
  p <- cases[[cs]]
  for (m in methods) {
    rows[[length(rows) + 1]] <- data.frame(case = cs, method = m, n_arg = "default",
                                           index = seq_along(p), p = p,
                                           p_adjusted = p.adjust(p, m))
    if (anyNA(p)) {
      rows[[length(rows) + 1]] <- data.frame(case = cs, method = m,
                                             n_arg = as.character(length(p)),
                                             index = seq_along(p), p = p,
                                             p_adjusted = p.adjust(p, m, n = length(p)))
    }
  }
}
out <- do.call(rbind, rows)

header <- c(
  "# Reference values produced by R stats::p.adjust; do not edit by hand.",
  sprintf("# R version: %s", R.version.string),
  "# pROC version: not used",
  sprintf("# Date: %s", format(Sys.Date())),
  "# Regenerate from the repository root: Rscript tests/reference/generate_padjust_R.R",
  "# n_arg=default: p.adjust(p, method) -> NAs held out, n = number of non-NA p-values.",
  "# n_arg=<int>: p.adjust(p, method, n = length(p)) with the NAs counted. Missing = NA."
)
path <- file.path(script_dir, "padjust_R.csv")
con <- file(path, open = "w")
writeLines(header, con)
writeLines("case,method,n_arg,index,p,p_adjusted", con)
writeLines(paste(out$case, out$method, out$n_arg, out$index, fmt(out$p), fmt(out$p_adjusted),
                 sep = ","), con)
close(con)
cat("wrote", path, "\n")
