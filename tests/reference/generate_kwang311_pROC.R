# Reference values for medaudit's AUROC / DeLong routines on REAL public data, computed with
# R + pROC: per-image P(TB) of ImageNet ResNet-50s trained on 4 source cohorts x 5 seeds,
# evaluated on the Montgomery (n = 28) and Shenzhen (n = 114) test sets
# (kwang311/tbx11k-cross-cohort-eval; see the data folder's README.md).
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_kwang311_pROC.R
#
# Input (NOT part of this repository, and must never be copied into it):
#     ../shared/data/tb_cross_cohort_predictions_kwang311/
#         resnet50_full_test-{Montgomery,Shenzhen}.csv
#     relative to the repository root; columns stem,label,s<seed>_<source> for seeds 42..46 and
#     sources TBX11K, Shenzhen, Montgomery, Qatar.
#
# Output: kwang311_pROC.csv next to this script, long form
#     cohort,kind,a,b,quantity,value
#   cohort    Montgomery | Shenzhen (the test set)
#   kind      single    a = score column (e.g. s42_TBX11K), b empty
#                       quantities: auc, var (var(roc, method = "delong")),
#                       ci_low / ci_high (pROC's ci.auc(method = "delong"), CLIPPED to [0, 1]),
#                       ci_low_unclipped / ci_high_unclipped (auc -/+ qnorm(0.975) * sqrt(var)),
#                       n_ties_across (number of (case, control) pairs with equal scores)
#             paired    a, b = score columns; roc.test(roc_a, roc_b, method = "delong",
#                       paired = TRUE); quantities: statistic (z), pvalue (two-sided),
#                       estimate (auc_a - auc_b), ci_low / ci_high (conf.int of the difference,
#                       not clipped by pROC), variance (pROC's sig^2 of the difference),
#                       auc_a, auc_b
#                       pairs: each source's s42 vs s43; and all 6 pairs of sources at seed 42
#                       (in the order TBX11K, Shenzhen, Montgomery, Qatar)
#             ensemble  a = source; score = row mean of that source's 5 seed columns;
#                       quantities: auc, var, ci_low_unclipped, ci_high_unclipped
#   value     sprintf("%.17g") -- round-trips doubles exactly (checked before writing)
#
# Conventions (fixed, never automatic):
#   roc(response = label, predictor = score, levels = c(0, 1), direction = "<", quiet = TRUE)
#   i.e. controls are label == 0, cases are label == 1, cases expected to score higher.

suppressPackageStartupMessages(library(pROC))

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})
repo_root <- normalizePath(file.path(script_dir, "..", ".."))
data_dir <- file.path(repo_root, "..", "shared", "data", "tb_cross_cohort_predictions_kwang311")
if (!dir.exists(data_dir)) stop("data folder not found: ", data_dir)
data_dir <- normalizePath(data_dir)

readme <- readLines(file.path(data_dir, "README.md"), warn = FALSE)
source_line <- grep("commit 0700004b", readme, value = TRUE)
stopifnot(length(source_line) == 1,
          grepl("0700004b6ad98912f813f08f8af8a1130e39ed0c", source_line))

fmt <- function(x) {
  out <- sprintf("%.17g", x)
  stopifnot(!anyNA(x), identical(as.numeric(out), as.numeric(x)))
  out
}

SOURCES <- c("TBX11K", "Shenzhen", "Montgomery", "Qatar")
SEEDS <- 42:46
COHORTS <- c("Montgomery", "Shenzhen")
score_cols <- as.vector(t(outer(SOURCES, SEEDS, function(src, s) paste0("s", s, "_", src))))

mk <- function(y, s) roc(response = y, predictor = s, levels = c(0, 1), direction = "<",
                         quiet = TRUE)

rows <- list()
add <- function(cohort, kind, a, b, quantity, value) {
  rows[[length(rows) + 1]] <<- data.frame(cohort = cohort, kind = kind, a = a, b = b,
                                          quantity = quantity, value = as.numeric(value))
}
notes <- character()

single_quantities <- function(r) {
  auc_v <- as.numeric(auc(r))
  v <- as.numeric(var(r, method = "delong"))
  ci <- as.numeric(ci.auc(r, method = "delong", conf.level = 0.95))  # lower, auc, upper
  half <- qnorm(0.975) * sqrt(v)
  raw <- c(auc_v - half, auc_v + half)
  stopifnot(isTRUE(all.equal(ci[2], auc_v)),
            isTRUE(all.equal(pROC:::delongPlacements(r)$theta, auc_v, tolerance = 1e-14)),
            isTRUE(all.equal(pmin(pmax(raw, 0), 1), ci[c(1, 3)], tolerance = 1e-14)))
  list(auc = auc_v, var = v, ci_low = ci[1], ci_high = ci[3],
       ci_low_unclipped = raw[1], ci_high_unclipped = raw[2])
}

ties_across <- function(y, s) sum(outer(s[y == 1], s[y == 0], "=="))

# Diagnostics written into the header: pROC clipping and tied scores.
note <- function(cohort, name, y, s, q) {
  if (q$ci_high_unclipped > 1 || q$ci_low_unclipped < 0)
    notes <<- c(notes, sprintf("# %s %s: pROC clipped the DeLong CI (unclipped %.6f, %.6f)",
                               cohort, name, q$ci_low_unclipped, q$ci_high_unclipped))
  n_dup <- sum(duplicated(s))
  n_ta <- ties_across(y, s)
  if (n_ta > 0 || n_dup > 0)
    notes <<- c(notes, sprintf("# %s %s: %d duplicated score value(s), %d case-control tie(s)",
                               cohort, name, n_dup, n_ta))
}

for (cohort in COHORTS) {
  path <- file.path(data_dir, sprintf("resnet50_full_test-%s.csv", cohort))
  d <- read.csv(path, colClasses = c(stem = "character"), check.names = FALSE)
  stopifnot(identical(names(d), c("stem", "label", score_cols)),
            all(d$label %in% c(0, 1)), !anyNA(d),
            identical(as.integer(d$label), as.integer(sub(".*_", "", d$stem))))
  y <- as.numeric(d$label)
  notes <- c(notes, sprintf("# %s: n = %d (%d cases, %d controls)", cohort, nrow(d),
                            sum(y == 1), sum(y == 0)))

  rocs <- list()
  for (col in score_cols) {
    s <- d[[col]]
    r <- mk(y, s)
    rocs[[col]] <- r
    q <- single_quantities(r)
    for (nm in names(q)) add(cohort, "single", col, "", nm, q[[nm]])
    add(cohort, "single", col, "", "n_ties_across", ties_across(y, s))
    note(cohort, col, y, s, q)
  }

  pairs <- c(lapply(SOURCES, function(src) c(paste0("s42_", src), paste0("s43_", src))),
             combn(paste0("s42_", SOURCES), 2, simplify = FALSE))
  for (p in pairs) {
    ra <- rocs[[p[1]]]
    rb <- rocs[[p[2]]]
    t <- roc.test(ra, rb, method = "delong", paired = TRUE, alternative = "two.sided",
                  conf.level = 0.95)
    calcs <- pROC:::delong.paired.calculations(ra, rb)
    est <- unname(t$estimate[1] - t$estimate[2])
    stopifnot(!is.null(t$conf.int),
              isTRUE(all.equal(unname(t$statistic), calcs$d / calcs$sig)),
              isTRUE(all.equal(t$p.value, 2 * pnorm(-abs(unname(t$statistic))))))
    add(cohort, "paired", p[1], p[2], "statistic", unname(t$statistic))
    add(cohort, "paired", p[1], p[2], "pvalue", t$p.value)
    add(cohort, "paired", p[1], p[2], "estimate", est)
    add(cohort, "paired", p[1], p[2], "ci_low", t$conf.int[1])
    add(cohort, "paired", p[1], p[2], "ci_high", t$conf.int[2])
    add(cohort, "paired", p[1], p[2], "variance", calcs$sig^2)
    add(cohort, "paired", p[1], p[2], "auc_a", unname(t$estimate[1]))
    add(cohort, "paired", p[1], p[2], "auc_b", unname(t$estimate[2]))
  }

  for (src in SOURCES) {
    s <- rowMeans(as.matrix(d[paste0("s", SEEDS, "_", src)]))
    q <- single_quantities(mk(y, s))
    note(cohort, paste0("ensemble_", src), y, s, q)
    for (nm in c("auc", "var", "ci_low_unclipped", "ci_high_unclipped"))
      add(cohort, "ensemble", src, "", nm, q[[nm]])
  }
}

res <- do.call(rbind, rows)

header <- c(
  "# Reference values produced by R + pROC on real public data; do not edit by hand.",
  sprintf("# R version: %s", R.version.string),
  sprintf("# pROC version: %s", as.character(packageVersion("pROC"))),
  sprintf("# Date: %s", format(Sys.Date())),
  sprintf("# Data: ../shared/data/tb_cross_cohort_predictions_kwang311/ (not in this repository)"),
  sprintf("# Data SOURCE: %s", trimws(source_line)),
  "# Regenerate from the repository root: Rscript tests/reference/generate_kwang311_pROC.R",
  "# See the comments at the top of that script for the exact pROC calls and the quantities.",
  notes
)

out_path <- file.path(script_dir, "kwang311_pROC.csv")
con <- file(out_path, open = "w")
writeLines(header, con)
writeLines("cohort,kind,a,b,quantity,value", con)
writeLines(paste(res$cohort, res$kind, res$a, res$b, res$quantity, fmt(res$value), sep = ","),
           con)
close(con)
cat("wrote", out_path, "with", nrow(res), "rows\n")
