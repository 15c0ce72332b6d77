(** * Oddness of attention (SPEC §3.5, step 1).

    Counterpart of the sympy proof [proofs.oddness.prove_attention_oddness].

    The attention output h(X) = Σ_i α_i x_i, with α = softmax(X W x_N), is odd:
    h(−X) = −h(X), because every score x_iᵀ W x_N is even in X and every value x_i is odd.
    Proved for every dimension d, every W and every sequence X (every length N). *)

From Coq Require Import Reals Lra List.
Import ListNotations.
From ExactAttention Require Import Defs.
Open Scope R_scope.

(** h(X) = Σ_i α_i x_i, coordinate by coordinate. *)
Definition hvec (d : nat) (W : mat) (X : list vec) : vec :=
  fun j => lsum (map (fun x => exp (score d W X x) * x j) X) / lsum (map (fun x => exp (score d W X x)) X).

(** −X: every token negated. *)
Definition neg_seq (X : list vec) : list vec := map vopp X.

Lemma query_neg_seq : forall X, X <> [] -> query (neg_seq X) = vopp (query X).
Proof.
  induction X as [|a X IH]; intros H; [contradiction|].
  destruct X as [|b X]; [reflexivity|].
  unfold query in *; cbn [map last] in *; apply IH; discriminate.
Qed.

Lemma score_neg_seq : forall d W X x, score d W (neg_seq X) (vopp x) = score d W X x.
Proof.
  intros d W X x; unfold score; destruct X as [|a X].
  - unfold query; simpl; unfold bil, vopp, vzero; apply sumn_ext; intros; apply sumn_ext; intros; ring.
  - rewrite query_neg_seq by discriminate; apply bil_opp_opp.
Qed.

Theorem attention_odd : forall (d : nat) (W : mat) (X : list vec) (j : nat),
  hvec d W (neg_seq X) j = - hvec d W X j.
Proof.
  intros d W X j; unfold hvec, neg_seq; rewrite !map_map.
  rewrite (map_ext (fun x => exp (score d W (map vopp X) (vopp x)) * vopp x j)
                   (fun x => - (exp (score d W X x) * x j)))
    by (intros; fold (neg_seq X); rewrite score_neg_seq; unfold vopp; ring).
  rewrite (map_ext (fun x => exp (score d W (map vopp X) (vopp x))) (fun x => exp (score d W X x)))
    by (intros; fold (neg_seq X); rewrite score_neg_seq; reflexivity).
  rewrite lsum_map_opp; unfold Rdiv; ring.
Qed.

(** Reading h(X) out with v gives the head: vᵀh(X) = f(X). *)
Lemma hvec_readout : forall d W v X, dot d v (hvec d W X) = attn d W v X.
Proof.
  intros d W v X; unfold dot, hvec, attn.
  rewrite (sumn_ext d _ (fun j => / lsum (map (fun x => exp (score d W X x)) X)
                                   * lsum (map (fun x => v j * (exp (score d W X x) * x j)) X)))
    by (intros; unfold Rdiv; rewrite lsum_map_scal; ring).
  rewrite sumn_scal_l, sumn_lsum_swap; unfold Rdiv; rewrite Rmult_comm; f_equal.
  apply lsum_map_ext; intros x _; unfold dot; rewrite <- sumn_scal_l; apply sumn_ext; intros; ring.
Qed.

(** So a head is odd too: f(−X) = −f(X), for every W, v and X. *)
Theorem head_odd : forall (d : nat) (W : mat) (v : vec) (X : list vec),
  attn d W v (neg_seq X) = - attn d W v X.
Proof.
  intros; rewrite <- !hvec_readout; unfold dot; rewrite <- sumn_opp; apply sumn_ext; intros.
  rewrite attention_odd; ring.
Qed.
