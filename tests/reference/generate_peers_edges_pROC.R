# Reference values from R + pROC for degenerate and large inputs of medaudit's DeLong,
# cut-point, partial-AUC and power routines (the edges the other generate_*_pROC.R skip).
#
# Regenerate (from the repository root):
#     Rscript tests/reference/generate_peers_edges_pROC.R
#
# Writes, next to this script:
#   edges_pROC.csv   one row per (case, quantity): long form, columns
#                    case,quantity,value  (value "NA" where pROC returns NA/NaN).
#
# Data sets are written out in the script itself (small ones literally; the large one by an
# integer formula that tests/stats/test_peers_pROC_edges.py rebuilds exactly), so no data
# file is needed.
# Conventions: roc(response = y, predictor = s, levels = c(0, 1), direction = "<",
# quiet = TRUE); ci.auc(method = "delong") (pROC clips the interval to [0, 1]);
# roc.test(method = "delong"); coords(x = "best") reports every tied row with pROC's
# midpoint thresholds; auc(partial.auc.correct = TRUE, allow.invalid.partial.auc.correct =
# TRUE).  Numbers are written with sprintf("%.17g") (exact round trip, checked).

suppressPackageStartupMessages(library(pROC))

script_dir <- local({
  arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
  if (length(arg) == 1) dirname(normalizePath(sub("^--file=", "", arg))) else "tests/reference"
})

fmt <- function(x) {
  x <- as.numeric(x)
  out <- sprintf("%.17g", x)
  out[is.na(x)] <- "NA"
  out[is.infinite(x) & x > 0] <- "inf"
  out[is.infinite(x) & x < 0] <- "-inf"
  ok <- is.finite(x)
  stopifnot(identical(as.numeric(out[ok]), x[ok]))
  out
}

mk <- function(y, s) roc(response = y, predictor = s, levels = c(0, 1), direction = "<",
                         quiet = TRUE)
rows <- list()
put <- function(case, quantity, value) {
  rows[[length(rows) + 1]] <<- data.frame(case = case, quantity = quantity, value = fmt(value))
}

# ------------------------------------------------------------ degenerate DeLong
small <- list(
  perfect   = list(y = c(0, 0, 0, 1, 1, 1), a = c(1, 2, 3, 4, 5, 6), b = c(1, 3, 2, 5, 4, 6)),
  alltied   = list(y = c(0, 0, 0, 1, 1, 1), a = c(1, 1, 1, 1, 1, 1), b = c(1, 2, 3, 4, 5, 6)),
  inverted  = list(y = c(0, 0, 0, 1, 1, 1), a = c(6, 5, 4, 3, 2, 1), b = c(2, 1, 3, 4, 6, 5)),
  identical = list(y = c(0, 0, 1, 0, 1, 1), a = c(1, 2, 3, 4, 5, 6), b = c(1, 2, 3, 4, 5, 6)),
  onepos    = list(y = c(0, 0, 0, 0, 1), a = c(1, 2, 3, 5, 4), b = c(1, 2, 4, 3, 5)),
  tiesboth  = list(y = c(0, 0, 0, 0, 1, 1, 1, 1), a = c(1, 2, 2, 3, 2, 3, 3, 4),
                   b = c(2, 2, 2, 2, 2, 2, 2, 3)))
for (nm in names(small)) {
  d <- small[[nm]]
  ra <- mk(d$y, d$a); rb <- mk(d$y, d$b)
  put(nm, "auc_a", auc(ra)); put(nm, "auc_b", auc(rb))
  put(nm, "var_a", suppressWarnings(var(ra, method = "delong")))
  for (lv in c(0.5, 0.9, 0.999)) {
    ci <- suppressWarnings(as.numeric(ci.auc(ra, method = "delong", conf.level = lv)))
    put(nm, sprintf("ci_a_low_%g", lv), ci[1]); put(nm, sprintf("ci_a_high_%g", lv), ci[3])
  }
  for (alt in c("two.sided", "greater", "less")) {
    t <- suppressWarnings(roc.test(ra, rb, method = "delong", paired = TRUE, alternative = alt))
    put(nm, paste0("paired_z_", alt), t$statistic)
    put(nm, paste0("paired_p_", alt), t$p.value)
    if (alt == "two.sided") {
      put(nm, "paired_ci_low", t$conf.int[1]); put(nm, "paired_ci_high", t$conf.int[2])
    }
  }
  # the same two curves as independent samples (pROC warns they look paired; muffled)
  u <- suppressWarnings(roc.test(ra, rb, method = "delong", paired = FALSE))
  put(nm, "unpaired_d", u$statistic); put(nm, "unpaired_df", u$parameter)
  put(nm, "unpaired_p", u$p.value)
}

# ------------------------------------------------------------ large n, integer scores
# item i = 1..n; y = ((i * 7919) %% 10) < 3; scores are integers (heavy ties)
n <- 100000
i <- seq_len(n)
y <- as.integer(((i * 7919) %% 10) < 3)
a <- ((i * 104729) %% 1009) + 250 * y
b <- ((i * 7907) %% 997) + 150 * y + ((i * 31) %% 200)
ra <- mk(y, a); rb <- mk(y, b)
put("large", "auc_a", auc(ra)); put("large", "auc_b", auc(rb))
put("large", "var_a", var(ra, method = "delong")); put("large", "var_b", var(rb, method = "delong"))
ci <- as.numeric(ci.auc(ra, method = "delong")); put("large", "ci_a_low_0.95", ci[1])
put("large", "ci_a_high_0.95", ci[3])
t <- roc.test(ra, rb, method = "delong", paired = TRUE)
put("large", "paired_z_two.sided", t$statistic); put("large", "paired_p_two.sided", t$p.value)
put("large", "paired_ci_low", t$conf.int[1]); put("large", "paired_ci_high", t$conf.int[2])
half <- i <= n / 2
r1 <- mk(y[half], a[half]); r2 <- mk(y[!half], b[!half])
# pROC guesses "paired" from equal lengths; the halves are independent samples
t <- suppressWarnings(roc.test(r1, r2, method = "delong", paired = FALSE))
put("large", "unpaired_d", t$statistic); put("large", "unpaired_df", t$parameter)
put("large", "unpaired_p", t$p.value)

# ------------------------------------------------------------ coords best, degenerate curves
curves <- list(
  constant = list(y = c(0, 0, 1, 1, 1), s = c(5, 5, 5, 5, 5)),
  perfect  = list(y = c(0, 0, 0, 1, 1), s = c(1, 2, 3, 4, 5)),
  inverted = list(y = c(0, 0, 0, 1, 1), s = c(5, 4, 3, 2, 1)),
  twolevel = list(y = c(0, 0, 1, 1, 0, 1), s = c(0, 0, 0, 1, 1, 1)))
for (nm in names(curves)) {
  d <- curves[[nm]]
  r <- mk(d$y, d$s)
  for (method in c("youden", "closest.topleft")) {
    for (w in list(c(1, 0.5), c(3, 0.1))) {
      cc <- as.data.frame(coords(r, "best", best.method = method, best.weights = w,
                                 ret = c("threshold", "sensitivity", "specificity"),
                                 transpose = FALSE))
      key <- sprintf("best_%s_%g_%g", method, w[1], w[2])
      put(nm, paste0(key, "_n_tied"), nrow(cc))
      # the row with the highest threshold (medaudit reports that one first)
      top <- cc[which.max(cc$threshold), ]
      put(nm, paste0(key, "_threshold"), top$threshold)
      put(nm, paste0(key, "_sensitivity"), top$sensitivity)
      put(nm, paste0(key, "_specificity"), top$specificity)
    }
  }
  for (rg in list(c(1, 0.8), c(0.9, 0.5))) {
    for (focus in c("specificity", "sensitivity")) {
      key <- sprintf("pauc_%s_%g_%g", focus, rg[2], rg[1])
      put(nm, paste0(key, "_raw"), auc(r, partial.auc = rg, partial.auc.focus = focus))
      put(nm, paste0(key, "_mcclish"),
          suppressWarnings(auc(r, partial.auc = rg, partial.auc.focus = focus,
                               partial.auc.correct = TRUE,
                               allow.invalid.partial.auc.correct = TRUE)))
    }
  }
}

# ------------------------------------------------------------ power.roc.test, extreme regimes
for (auc_v in c(0.51, 0.55, 0.99)) {
  for (kappa in c(0.25, 10)) {
    for (sl in c(0.01, 0.2)) {
      key <- sprintf("auc%g_kappa%g_sig%g", auc_v, kappa, sl)
      p <- power.roc.test(auc = auc_v, sig.level = sl, power = 0.99, kappa = kappa)
      put("power", paste0(key, "_ncases"), p$ncases)
      q <- power.roc.test(auc = auc_v, sig.level = sl, ncases = 5, ncontrols = 5 * kappa)
      put("power", paste0(key, "_power_n5"), q$power)
    }
  }
}

out <- do.call(rbind, rows)
header <- c(
  "# Reference values produced by R + pROC; do not edit by hand.",
  sprintf("# R version: %s", R.version.string),
  sprintf("# pROC version: %s", as.character(packageVersion("pROC"))),
  sprintf("# Date: %s", format(Sys.Date())),
  "# Regenerate from the repository root: Rscript tests/reference/generate_peers_edges_pROC.R",
  "# See the comments at the top of that script for the exact pROC calls and conventions.")
con <- file(file.path(script_dir, "edges_pROC.csv"), open = "w")
writeLines(header, con)
writeLines("case,quantity,value", con)
writeLines(paste(out$case, out$quantity, out$value, sep = ","), con)
close(con)
cat("wrote edges_pROC.csv in", script_dir, "\n")
