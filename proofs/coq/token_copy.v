(** * The token-copy identity of canonical multi-head recovery (SPEC §3.7).

    Counterpart of the sympy proof [proofs.token_copy.prove_token_copy].

    With k copies of a token u followed by the query q,
        f([u, …, u, q]) = A − Σ_h c_h / (1 + k·r_h),
    where A = uᵀ(Σ_h v_h), c_h = (u − q)ᵀ v_h and r_h = exp((u − q)ᵀ W_h q).
    Proved for every k ≥ 0 (k = 0 is the one-token sequence [q]), every dimension d and
    every list of heads. *)

From Coq Require Import Reals Lra List.
Import ListNotations.
From ExactAttention Require Import Defs.
Open Scope R_scope.

(** The sum of the heads' value vectors, Σ_h v_h. *)
Definition v_total (hs : list Head) : vec := fun i => lsum (map (fun h => snd h i) hs).

Definition copies (k : nat) (u q : vec) : list vec := repeat u k ++ [q].

Definition c_h (d : nat) (u q : vec) (h : Head) : R := dot d (vsub u q) (snd h).
Definition r_h (d : nat) (u q : vec) (h : Head) : R := exp (bil d (vsub u q) (fst h) q).

Lemma query_copies : forall k u q, query (copies k u q) = q.
Proof. intros; unfold query, copies; apply last_last. Qed.

(** One head: f = vᵀu − (u − q)ᵀv / (1 + k·r). *)
Lemma token_copy_head : forall d W v k u q,
  attn d W v (copies k u q) =
  dot d u v - dot d (vsub u q) v / (1 + INR k * exp (bil d (vsub u q) W q)).
Proof.
  intros d W v k u q; unfold attn, score; rewrite query_copies; unfold copies.
  rewrite !map_app, !lsum_app, !lsum_map_repeat; cbn [map lsum].
  rewrite bil_sub_l.
  assert (Hd : forall x y, dot d x y = dot d y x) by (intros; unfold dot; apply sumn_ext; intros; ring).
  assert (Hs : dot d (vsub u q) v = dot d v u - dot d v q) by (rewrite Hd, dot_sub_r; reflexivity).
  rewrite Hs, (Hd u v).
  set (a := bil d u W q); set (b := bil d q W q).
  replace (exp a) with (exp b * exp (a - b)) by (rewrite <- exp_plus; f_equal; ring).
  set (E := exp b); set (r := exp (a - b)).
  assert (0 < E) by apply exp_pos; assert (0 < r) by apply exp_pos; pose proof (pos_INR k).
  assert (0 <= INR k * r) by nra.
  assert (0 <= E * (INR k * r)) by nra.
  field; split; lra.
Qed.

Theorem token_copy : forall (d : nat) (hs : list Head) (k : nat) (u q : vec),
  F d hs (copies k u q) =
  dot d u (v_total hs) - lsum (map (fun h => c_h d u q h / (1 + INR k * r_h d u q h)) hs).
Proof.
  intros d hs k u q; unfold F.
  rewrite (map_ext _ _ (fun h => token_copy_head d (fst h) (snd h) k u q)).
  unfold Rminus; rewrite lsum_map_plus, lsum_map_opp; f_equal.
  unfold dot, v_total; rewrite <- sumn_lsum_swap; apply sumn_ext; intros i _.
  rewrite <- lsum_map_scal; reflexivity.
Qed.
