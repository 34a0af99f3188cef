# Reference values for medaudit's DeLong routines, computed with R + pROC.
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_delong_pROC.R
#
# Writes, next to this script:
#   delong_pROC_data.csv  the exact inputs (long form: dataset,item,y_true,score_a,score_b),
#                         so the Python tests read the *same* numbers R used;
#   delong_pROC.csv       one row per data set with pROC's results.
#
# Everything is deterministic: the RNG kind is fixed and every random data set has its own
# set.seed().  Numbers are written with sprintf("%.17g"), which round-trips doubles exactly
# (checked below before writing).
#
# Conventions (all fixed, never automatic):
#   roc(response = y_true, predictor = score, levels = c(0, 1), direction = "<", quiet = TRUE)
#   i.e. controls are y_true == 0, cases are y_true == 1, and cases are expected to score
#   higher (controls < cases).  Curve "a" uses score_a, curve "b" uses score_b.
#
# Notes on pROC 1.18.0 behaviour that matter for the comparison:
#   * ci.auc(method = "delong") CLIPS the interval to [0, 1]
#     (pROC:::ci.auc.delong ends with `ci[ci > 1] <- 1; ci[ci < 0] <- 0`).
#     Columns ci_*_low / ci_*_high are pROC's (possibly clipped) bounds; columns
#     ci_*_low_raw / ci_*_high_raw are the same normal interval computed here without
#     clipping (qnorm(c(0.025, 0.975), mean = auc, sd = sqrt(var)), pROC's own expression),
#     and ci_*_low_clipped / ci_*_high_clipped (0/1) flag the bounds pROC clipped
#     (raw < 0 or raw > 1).  In the committed data only small_ties is clipped (both upper
#     bounds, to 1).
#   * roc.test(paired = TRUE, method = "delong") reports a conf.int for auc_a - auc_b
#     (pROC:::ci.delong.paired: d -/+ qnorm(0.975) * sig, not clipped), and the
#     statistic is a z referred to the standard normal.
#   * roc.test(paired = FALSE, method = "delong") reports a statistic "D" and refers it to a
#     Student t distribution with Welch-Satterthwaite-type df
#     (pROC:::delong.unpaired.test: df = (SR + SS)^2 / (SR^2/(NR-1) + SS^2/(NS-1)), with NR, NS
#     the total number of items of each curve), NOT to the normal.  Column
#     unpaired_pvalue_t is pROC's p-value; unpaired_pvalue_normal = 2 * pnorm(-|D|) is
#     computed here from the same statistic for implementations that use a z test.
#     pROC gives no conf.int for the unpaired test.
#   * Here the "unpaired" test is applied to the two curves of the same data set treated as
#     independent samples (pROC warns that they look paired; that one warning is muffled).

suppressPackageStartupMessages(library(pROC))

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

# ---------------------------------------------------------------------------------------------
# Data sets
# ---------------------------------------------------------------------------------------------
datasets <- list()

# 1. aSAH (bundled with pROC): Poor outcome = 1 (case), Good = 0 (control);
#    score_a = s100b, score_b = WFNS grade (ordered factor 1..5 as numeric).  Heavy ties.
data(aSAH, package = "pROC")
stopifnot(identical(levels(aSAH$wfns), as.character(1:5)))
datasets$aSAH <- data.frame(
  y_true  = as.integer(aSAH$outcome == "Poor"),
  score_a = as.numeric(aSAH$s100b),
  score_b = as.numeric(as.character(aSAH$wfns))
)

# 2. small_ties: hand-made, 12 items, ties within and across classes in both scores.
datasets$small_ties <- data.frame(
  y_true  = c(0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1),
  score_a = c(0.1, 0.2, 0.3, 0.3, 0.5, 0.5, 0.7, 0.3, 0.5, 0.6, 0.7, 0.9),
  score_b = c(1, 2, 2, 3, 3, 4, 2, 3, 3, 4, 5, 4)
)

# 3. binormal_200: 80 positives, 120 negatives in shuffled order; correlated scores,
#    rounded to 2 decimals (ties).
set.seed(2026)
local({
  y <- sample(c(rep(1L, 80), rep(0L, 120)))
  a <- rnorm(200) + 1.0 * y
  b <- 0.6 * a + rnorm(200, sd = 0.8) + 0.3 * y
  datasets$binormal_200 <<- data.frame(y_true = y, score_a = round(a, 2), score_b = round(b, 2))
})

# 4. imbalanced: 5 positives among 300 items.
set.seed(20260005)
local({
  y <- sample(c(rep(1L, 5), rep(0L, 295)))
  a <- rnorm(300) + 1.5 * y
  b <- 0.5 * a + rnorm(300, sd = 0.9) + 0.5 * y
  datasets$imbalanced <<- data.frame(y_true = y, score_a = round(a, 3), score_b = round(b, 3))
})

# ---------------------------------------------------------------------------------------------
# pROC computations
# ---------------------------------------------------------------------------------------------
muffle_paired_warning <- function(expr) {
  withCallingHandlers(expr, warning = function(w) {
    if (grepl("seem to be paired", conditionMessage(w))) invokeRestart("muffleWarning")
  })
}

one_dataset <- function(name, d) {
  stopifnot(all(d$y_true %in% c(0, 1)), !anyNA(d))
  mk <- function(s) roc(response = d$y_true, predictor = s, levels = c(0, 1),
                        direction = "<", quiet = TRUE)
  ra <- mk(d$score_a)
  rb <- mk(d$score_b)

  per_curve <- function(r, tag) {
    auc_v <- as.numeric(auc(r))
    theta <- pROC:::delongPlacements(r)$theta
    v <- as.numeric(var(r, method = "delong"))
    ci <- as.numeric(ci.auc(r, method = "delong", conf.level = 0.95))  # lower, auc, upper
    # Same expression as pROC:::ci.auc.delong, minus its final clipping to [0, 1].
    raw <- qnorm(c(0.025, 0.975), mean = auc_v, sd = sqrt(v))
    clipped <- c(raw[1] < 0, raw[2] > 1)
    stopifnot(isTRUE(all.equal(ci[c(1, 3)][!clipped], raw[!clipped], tolerance = 1e-14)),
              all(ci[c(1, 3)][clipped] == c(0, 1)[clipped]))
    out <- c(auc_v, theta, v, ci[1], ci[3], raw[1], raw[2],
             as.integer(clipped[1]), as.integer(clipped[2]))
    names(out) <- paste0(c("auc_", "theta_", "var_", "ci_", "ci_", "ci_", "ci_", "ci_", "ci_"),
                         tag,
                         c("", "", "", "_low", "_high", "_low_raw", "_high_raw",
                           "_low_clipped", "_high_clipped"))
    out
  }

  tp <- roc.test(ra, rb, method = "delong", paired = TRUE, alternative = "two.sided",
                 conf.level = 0.95)
  tg <- roc.test(ra, rb, method = "delong", paired = TRUE, alternative = "greater",
                 conf.level = 0.95)
  calcs <- pROC:::delong.paired.calculations(ra, rb)
  stopifnot(!is.null(tp$conf.int), isTRUE(all.equal(unname(tp$statistic), calcs$d / calcs$sig)))

  tu <- muffle_paired_warning(
    roc.test(ra, rb, method = "delong", paired = FALSE, alternative = "two.sided"))
  D <- unname(tu$statistic)
  df <- unname(tu$parameter)
  var_unpaired <- ((unname(tu$estimate[1]) - unname(tu$estimate[2])) / D)^2

  c(per_curve(ra, "a"), per_curve(rb, "b"),
    n_items = nrow(d), n_pos = sum(d$y_true == 1), n_neg = sum(d$y_true == 0),
    paired_estimate = unname(tp$estimate[1] - tp$estimate[2]),
    paired_variance = calcs$sig^2,
    paired_statistic = unname(tp$statistic),
    paired_pvalue = tp$p.value,
    paired_ci_low = tp$conf.int[1],
    paired_ci_high = tp$conf.int[2],
    paired_pvalue_greater = tg$p.value,
    unpaired_estimate = unname(tu$estimate[1] - tu$estimate[2]),
    unpaired_variance = var_unpaired,
    unpaired_statistic = D,
    unpaired_df = df,
    unpaired_pvalue_t = tu$p.value,
    unpaired_pvalue_normal = 2 * pnorm(-abs(D)))
}

results <- lapply(names(datasets), function(nm) one_dataset(nm, datasets[[nm]]))
res <- as.data.frame(do.call(rbind, results))
res <- cbind(dataset = names(datasets), res)

# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------
header <- c(
  "# Reference values produced by R + pROC; do not edit by hand.",
  sprintf("# R version: %s", R.version.string),
  sprintf("# pROC version: %s", as.character(packageVersion("pROC"))),
  sprintf("# Date: %s", format(Sys.Date())),
  "# Regenerate from the repository root: Rscript tests/reference/generate_delong_pROC.R",
  "# See the comments at the top of that script for the exact pROC calls and conventions."
)

write_block <- function(path, header, df) {
  con <- file(path, open = "w")
  on.exit(close(con))
  writeLines(header, con)
  writeLines(paste(names(df), collapse = ","), con)
  cols <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  writeLines(do.call(paste, c(cols, sep = ",")), con)
}

long <- do.call(rbind, lapply(names(datasets), function(nm) {
  d <- datasets[[nm]]
  data.frame(dataset = nm, item = seq_len(nrow(d)), y_true = as.integer(d$y_true),
             score_a = d$score_a, score_b = d$score_b)
}))
long$item <- as.integer(long$item)
int_cols <- c("n_items", "n_pos", "n_neg", "ci_a_low_clipped", "ci_a_high_clipped",
              "ci_b_low_clipped", "ci_b_high_clipped")
for (col in int_cols) res[[col]] <- as.character(as.integer(res[[col]]))

write_block(file.path(script_dir, "delong_pROC_data.csv"),
            c(header[1:5],
              "# Inputs used by generate_delong_pROC.R (y_true: 1 = case, 0 = control)."),
            long)
write_block(file.path(script_dir, "delong_pROC.csv"), header, res)
cat("wrote", file.path(script_dir, "delong_pROC_data.csv"), "and",
    file.path(script_dir, "delong_pROC.csv"), "\n")
