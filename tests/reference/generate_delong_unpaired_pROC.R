# Reference values for medaudit's unpaired DeLong test with pROC's t distribution,
# computed with R + pROC (two independent samples of different sizes).
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_delong_unpaired_pROC.R
#
# Writes, next to this script:
#   delong_unpaired_pROC_data.csv  the exact inputs (dataset,sample,item,y_true,score);
#   delong_unpaired_pROC.csv       pROC's roc.test(paired = FALSE, method = "delong") per data
#                                  set: AUCs, statistic D, df and the p-value for each
#                                  alternative (two.sided, greater, less).
#
# Conventions: roc(response, predictor, levels = c(0, 1), direction = "<", quiet = TRUE);
# sample "a" is roc1, "b" is roc2, so "greater" tests AUC_a > AUC_b.  Numbers are written
# with sprintf("%.17g") (doubles round-trip exactly).

suppressPackageStartupMessages(library(pROC))
RNGkind(kind = "Mersenne-Twister", normal.kind = "Inversion", sample.kind = "Rejection")

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})
fmt <- function(x) sprintf("%.17g", x)

sets <- list()
# 1. hand-made, 5 and 6 items
sets$small <- list(
  a = data.frame(y = c(0, 1, 0, 1, 1), s = c(0.1, 0.9, 0.7, 0.8, 0.3)),
  b = data.frame(y = c(0, 1, 0, 0, 1, 0), s = c(0.2, 0.6, 0.1, 0.4, 0.5, 0.3)))
# 2. binormal, 60 and 90 items, scores rounded to 1 decimal (ties within and across classes)
set.seed(17)
ya <- sample(rep(c(1, 0), c(25, 35))); yb <- sample(rep(c(1, 0), c(30, 60)))
sets$binormal_ties <- list(
  a = data.frame(y = ya, s = round(rnorm(60) + 1.1 * ya, 1)),
  b = data.frame(y = yb, s = round(rnorm(90) + 0.6 * yb, 1)))
# 3. aSAH (bundled with pROC): s100b in women vs men, Poor outcome = 1
data(aSAH, package = "pROC")
w <- aSAH$gender == "Female"
sets$aSAH_by_gender <- list(
  a = data.frame(y = as.integer(aSAH$outcome[w] == "Poor"), s = aSAH$s100b[w]),
  b = data.frame(y = as.integer(aSAH$outcome[!w] == "Poor"), s = aSAH$s100b[!w]))

rows <- list(); data_rows <- list()
for (name in names(sets)) {
  d <- sets[[name]]
  r1 <- roc(d$a$y, d$a$s, levels = c(0, 1), direction = "<", quiet = TRUE)
  r2 <- roc(d$b$y, d$b$s, levels = c(0, 1), direction = "<", quiet = TRUE)
  p <- sapply(c("two.sided", "greater", "less"), function(alt)
    roc.test(r1, r2, paired = FALSE, method = "delong", alternative = alt)$p.value)
  t2 <- roc.test(r1, r2, paired = FALSE, method = "delong")
  rows[[name]] <- data.frame(dataset = name, auc_a = fmt(as.numeric(auc(r1))),
                             auc_b = fmt(as.numeric(auc(r2))), statistic = fmt(unname(t2$statistic)),
                             df = fmt(unname(t2$parameter)), p_two_sided = fmt(p[["two.sided"]]),
                             p_greater = fmt(p[["greater"]]), p_less = fmt(p[["less"]]))
  for (smp in c("a", "b")) {
    x <- d[[smp]]
    data_rows[[paste(name, smp)]] <- data.frame(dataset = name, sample = smp,
                                                item = seq_len(nrow(x)) - 1, y_true = x$y,
                                                score = fmt(x$s))
  }
}
header <- c("# Reference values produced by R + pROC; do not edit by hand.",
            paste("# R version:", R.version.string),
            paste("# pROC version:", as.character(packageVersion("pROC"))),
            "# Regenerate from the repository root: Rscript tests/reference/generate_delong_unpaired_pROC.R")
write_with_header <- function(df, path) {
  writeLines(header, path)
  suppressWarnings(write.table(df, path, sep = ",", row.names = FALSE, quote = FALSE,
                               append = TRUE))
}
write_with_header(do.call(rbind, rows), file.path(script_dir, "delong_unpaired_pROC.csv"))
write_with_header(do.call(rbind, data_rows), file.path(script_dir, "delong_unpaired_pROC_data.csv"))
